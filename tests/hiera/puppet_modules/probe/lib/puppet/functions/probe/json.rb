# frozen_string_literal: true

require 'json'

# Test support only: render a looked-up value as JSON so the Python tests can read what a
# compile saw (Puppet's core has no JSON rendering function).
Puppet::Functions.create_function(:'probe::json') do
  dispatch :json do
    param 'Any', :value
  end

  def json(value)
    JSON.generate(value)
  end
end
