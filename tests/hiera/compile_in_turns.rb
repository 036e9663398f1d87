# frozen_string_literal: true

# Compiles one node again and again in one Ruby process, as a Puppet master does, in turns the
# test drives: after compile n it prints `VALUES <json>` and waits for the file `<go>-<n>`.
# Usage: ruby compile_in_turns.rb SETTINGS.json (puppet_args, environment, certname, facts,
# compiles, go).

require 'json'
require 'puppet'

settings = JSON.parse(File.read(ARGV.fetch(0)))
Puppet.initialize_settings(settings.fetch('puppet_args'))
Puppet[:facts_terminus] = 'yaml'
Puppet[:environment_timeout] = 'unlimited'
certname = settings.fetch('certname')

settings.fetch('compiles').times do |turn|
  environment = Puppet.lookup(:environments).get!(settings.fetch('environment'))
  node = Puppet::Node.new(certname, environment: environment)
  node.fact_merge(Puppet::Node::Facts.new(certname, settings.fetch('facts').dup))
  values = nil
  Puppet.override(current_environment: environment) do
    compiler = Puppet::Parser::Compiler.new(node)
    compiler.compile do |catalog|
      values = compiler.topscope['found']
      catalog.to_resource
    end
  end
  puts "VALUES #{JSON.generate(values)}"
  $stdout.flush
  go = "#{settings.fetch('go')}-#{turn + 1}"
  sleep 0.05 until File.exist?(go) || turn + 1 == settings.fetch('compiles')
end
