# frozen_string_literal: true

# Warm compiles in one Ruby process, the way a Puppet master compiles: Puppet is loaded and the
# environments are cached once, then the same node's catalog is compiled again and again.
# Called by bench/hiera.py with a JSON settings file; prints one JSON object:
#   {"<environment>": {"times": [seconds], "cpu": [seconds], "values": {key => value}}}
# per measured compile: wall time, and CPU time of this process (robust on a busy machine).
# The warm-up compiles are not timed; environments are interleaved so drift hits both alike.

require 'json'
require 'puppet'

settings = JSON.parse(File.read(ARGV.fetch(0)))
Puppet.initialize_settings(settings.fetch('puppet_args'))
Puppet[:facts_terminus] = 'yaml' # never run Facter: the node's facts are given
# A master keeps environments (and Hiera's parsed YAML files) between compiles; Puppet's
# default environment_timeout of 0 would re-read every file per compile and flatter gitstore.
Puppet[:environment_timeout] = 'unlimited'

certname = settings.fetch('certname')
fact_values = settings.fetch('facts')

compile = lambda do |env_name|
  environment = Puppet.lookup(:environments).get!(env_name)
  node = Puppet::Node.new(certname, environment: environment)
  node.fact_merge(Puppet::Node::Facts.new(certname, fact_values.dup))
  values = nil
  Puppet.override(current_environment: environment) do
    compiler = Puppet::Parser::Compiler.new(node)
    compiler.compile do |catalog|
      values = compiler.topscope['values']
      catalog.to_resource
    end
  end
  values
end

clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
cpu = -> { Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) }
environments = settings.fetch('environments')
results = environments.to_h { |env| [env, { 'times' => [], 'cpu' => [], 'values' => nil }] }
settings.fetch('warmups').times do
  environments.each { |env| results[env]['values'] = compile.call(env) }
end
settings.fetch('runs').times do
  environments.each do |env|
    started, cpu_started = clock.call, cpu.call
    compile.call(env)
    results[env]['times'] << clock.call - started
    results[env]['cpu'] << cpu.call - cpu_started
  end
end
puts JSON.generate(results)
