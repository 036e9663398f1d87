# frozen_string_literal: true

require_relative '../../../puppet_x/gitstore/node_document'

# A Hiera 5 `data_hash` backend that reads gitstore's node document over HTTP(S).
#
# Each hierarchy entry names a resource with `uri:` (Hiera hands it over as `options['uri']`);
# the level's data is that resource's effective values at the node. An entry whose uri is a
# section of the node document (`gitstore_instances`) answers one key, the section's name, with
# the section's data. The node document is fetched once per compile and shared by every level,
# so every key of a compile sees one commit.
# Options (see docs/hiera.md): url, environment, node (default: the compiling node's
# trusted.certname), version, timeout, token, user, password,
# ssl_ca_file, failure (error|graceful, for an unknown node), and keystone_url, keystone_user,
# keystone_password, keystone_project, keystone_user_domain, keystone_project_domain (Keystone
# credentials exchanged for a token, refreshed before it expires).
Puppet::Functions.create_function(:'gitstore::data_hash') do
  dispatch :data_hash do
    param 'Hash[String, Any]', :options
    param 'Puppet::LookupContext', :context
  end

  def data_hash(options, context)
    resource = options['uri'].to_s
    if resource.empty?
      raise PuppetX::Gitstore::Error,
            'gitstore::data_hash: the hierarchy entry has no uri; name the resource with ' \
            'uri: (path: entries are only used when a file of that name exists)'
    end
    certname = options.key?('node') ? nil : certname_of(context)
    settings = PuppetX::Gitstore::Settings.of(options, certname)
    document = PuppetX::Gitstore::CompileMemo.document(context, settings)
    return {} if document.nil?

    level_data(document, resource, settings, context)
  end

  # The compiling node's certname (`trusted.certname`): the node asked for when the options
  # name none.
  def certname_of(context)
    trusted = context.invocation.scope['trusted']
    trusted.is_a?(Hash) ? trusted['certname'] : nil
  end

  def level_data(document, resource, settings, context)
    sections = PuppetX::Gitstore::SECTIONS
    return section_data(document, resource, context) if sections.include?(resource)

    resources = document['resources']
    unless resources.key?(resource)
      raise PuppetX::Gitstore::Error,
            "gitstore::data_hash: GET #{settings.url}: resource #{resource.inspect} is not " \
            "defined for environment #{settings.environment} (served: #{resources.keys.join(', ')})"
    end
    context.explain { "gitstore: #{resource} at commit #{document['commit']}" }
    resources[resource] || {}
  end

  # A server without the section answers it empty rather than failing every compile.
  def section_data(document, section, context)
    context.explain { "gitstore: section #{section} at commit #{document['commit']}" }
    { section => document[section] || {} }
  end
end
