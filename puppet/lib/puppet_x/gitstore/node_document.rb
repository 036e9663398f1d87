# frozen_string_literal: true

# The HTTP side of the gitstore Hiera backend: settings checked once, one GET of the node
# document, and a compile-scoped memo so every hierarchy level of a compile answers from that
# one response. Ruby's standard library only (net/http, openssl, json), so the module installs
# on any Puppet master without gems.

require 'json'
require 'net/http'
require 'openssl'
require 'uri'
require_relative 'keystone_login'

module PuppetX
  module Gitstore
    # Every failure of the backend; messages name the URL and the cause.
    class Error < Puppet::DataBinding::LookupError; end

    FAILURE_MODES = %w[error graceful].freeze
    OPTIONS = %w[url environment node version timeout token user password ssl_ca_file
                 failure keystone_url keystone_user keystone_password keystone_project
                 keystone_user_domain keystone_project_domain].freeze
    # Keys Hiera itself puts into the options of a hierarchy entry.
    HIERA_KEYS = %w[uri].freeze
    # Parts of the node document besides `resources` that a hierarchy entry's uri may name
    # (a constant here: one assigned inside the function's block would land on Object).
    SECTIONS = %w[gitstore_instances].freeze
    DEFAULT_TIMEOUT = 10

    # The options of a hierarchy entry, checked and normalised.
    class Settings
      attr_reader :base, :environment, :node, :version, :timeout, :token, :user, :password,
                  :ssl_ca_file, :failure, :login, :url

      KEPT = 256
      @kept = {}
      @lock = Mutex.new

      # The settings of `options`, checked once: every level of every compile hands its
      # options over again (7 levels: 7 checks per compile), mostly the same few. `certname`
      # is the compiling node's, the node asked for when the options name none.
      def self.of(options, certname = nil)
        key = [options.to_a, certname].freeze
        found = @lock.synchronize { @kept[key] }
        return found if found

        settings = new(options, certname)
        @lock.synchronize do
          @kept.clear if @kept.size >= KEPT
          @kept[key] = settings
        end
      end

      def initialize(options, certname = nil)
        unknown = options.keys - OPTIONS - HIERA_KEYS
        unless unknown.empty?
          raise Error, "gitstore::data_hash: unknown option '#{unknown.first}' " \
                       "(known: #{OPTIONS.join(', ')})"
        end
        @base = base_url(options)
        @environment = environment_id(options)
        @node = node_of(options, certname)
        @version = pin(options)
        @timeout = timeout_of(options)
        @token, @user, @password, @ssl_ca_file = options.values_at('token', 'user', 'password',
                                                                    'ssl_ca_file')
        fail_option('token', 'and user/password exclude each other: give one') if @token && @user
        @login = keystone_login(options)
        @failure = options.fetch('failure', 'error').to_s
        unless FAILURE_MODES.include?(@failure)
          fail_option('failure', "must be #{FAILURE_MODES.join(' or ')}, not #{@failure.inspect}")
        end
        @url = url_of.freeze
      end

      def graceful?
        failure == 'graceful'
      end

      private

      # The node document's URL: what the compile-scoped memo is keyed by.
      def url_of
        path = "/api/v1/hiera/#{escape(environment)}/#{escape(node)}"
        query = version.nil? ? '' : "?version=#{escape(version)}"
        "#{base}#{path}#{query}"
      end

      # Keystone credentials the backend exchanges for a token (a token of Keystone's own can
      # be given as `token` instead).
      def keystone_login(options)
        return nil unless options.key?('keystone_url')

        if @token || @user
          fail_option('keystone_url', 'excludes token, user and password: give one')
        end
        Login.new(auth_url: required(options, 'keystone_url'),
                  user: required(options, 'keystone_user'),
                  password: required(options, 'keystone_password'),
                  project: options['keystone_project']&.to_s,
                  user_domain: options.fetch('keystone_user_domain', 'Default').to_s,
                  project_domain: options.fetch('keystone_project_domain', 'Default').to_s)
      end

      # `node` when given (it may interpolate anything), else the compiling node's certname:
      # the usual choice, without the cost of `%{trusted.certname}` in hiera.yaml (Hiera checks
      # an interpolated option's variables again at every lookup: ~1 ms per 200-key compile).
      def node_of(options, certname)
        return required(options, 'node') if options.key?('node')

        name = certname.to_s.strip
        return name unless name.empty?

        fail_option('node', 'is not given and the compile has no trusted certname to use')
      end

      def required(options, key)
        value = options[key].to_s.strip
        fail_option(key, 'is empty (an interpolated variable may be unset)') if value.empty?
        value
      end

      def base_url(options)
        text = required(options, 'url')
        uri = URI(text)
        return text.chomp('/') if %w[http https].include?(uri.scheme) && !uri.host.to_s.empty?

        fail_option('url', "#{text.inspect} must be an http:// or https:// URL")
      rescue URI::InvalidURIError => e
        fail_option('url', "#{text.inspect} is not a URL: #{e.message}")
      end

      def environment_id(options)
        value = required(options, 'environment')
        return value if value.match?(/\A\d+\z/)

        fail_option('environment', "must be an environment id, not #{value.inspect}")
      end

      # An absent pin serves the head of main; a pin that interpolated to '' is a mistake,
      # never "latest" (a compile would silently float to new commits).
      def pin(options)
        return nil unless options.key?('version')

        value = options['version'].to_s.strip
        return value unless value.empty?

        fail_option('version', 'is empty: an empty pin is an error, not "latest" ' \
                               '(is the variable it interpolates set for this node?)')
      end

      def timeout_of(options)
        value = options.fetch('timeout', DEFAULT_TIMEOUT)
        number = Float(value, exception: false)
        return number if number&.positive?

        fail_option('timeout', "must be a positive number of seconds, not #{value.inspect}")
      end

      def escape(text)
        URI.encode_www_form_component(text.to_s).gsub('+', '%20')
      end

      def fail_option(key, problem)
        raise Error, "gitstore::data_hash: option '#{key}' #{problem}"
      end
    end

    # The node documents this Ruby process fetched last, by URL and credentials, with their
    # ETags. A Puppet master compiles the same nodes again and again: the next compile sends
    # the ETag back (If-None-Match) and a 304 reuses the parsed document, so an unchanged
    # document is neither sent nor parsed again (37 KB of JSON). Every compile still asks the
    # server, so a change is seen at once. Like the data Hiera's YAML backend keeps between
    # compiles, the documents are read only.
    module Revalidation
      LIMIT = 64
      @entries = {}
      @lock = Mutex.new

      def self.lookup(key)
        @lock.synchronize { @entries[key] }
      end

      def self.store(key, etag, document)
        @lock.synchronize do
          @entries.delete(key)
          @entries[key] = [etag, document]
          @entries.delete(@entries.keys.first) while @entries.size > LIMIT
        end
      end
    end

    # Connections to gitstore servers kept open between compiles: one per server, settings and
    # thread (Puppet Server compiles in several JRuby threads; a connection carries one request
    # at a time). A compile then costs one request on an open connection, not a TCP (and TLS)
    # handshake and a fresh accept on the server. A kept connection the server has closed
    # meanwhile (a restart, its keep-alive timeout, a worker replaced) is noticed by Net::HTTP
    # before it sends, or fails the request at once: then the GET, which changes nothing, is
    # sent once more on a new connection.
    module Connections
      # The server closing a kept connection, as the next request on it sees it.
      CLOSED = [EOFError, IOError, Errno::ECONNRESET, Errno::EPIPE, Errno::ECONNABORTED,
                Net::HTTPBadResponse].freeze

      # The response to the request `build` makes, on this thread's connection to `uri`.
      def self.request(uri, settings, &build)
        key = [uri.scheme, uri.host, uri.port, settings.ssl_ca_file, settings.timeout]
        kept = mine[key]
        return send_on(key, open(uri, settings), build.call) unless kept

        begin
          kept.request(build.call)
        rescue *CLOSED
          forget(key)
          send_on(key, open(uri, settings), build.call)
        end
      rescue StandardError
        forget(key) # a half-read or timed-out connection is never used again
        raise
      end

      def self.send_on(key, http, request)
        mine[key] = http
        http.request(request)
      end

      def self.open(uri, settings)
        http = Net::HTTP.new(uri.host, uri.port)
        http.use_ssl = uri.scheme == 'https'
        if http.use_ssl?
          http.verify_mode = OpenSSL::SSL::VERIFY_PEER
          http.ca_file = settings.ssl_ca_file if settings.ssl_ca_file
        end
        http.open_timeout = http.read_timeout = http.write_timeout = settings.timeout
        # Net::HTTP re-sends an idempotent request once after a timeout, doubling the wait.
        http.max_retries = 0
        http.start
      end

      def self.forget(key)
        http = mine.delete(key)
        http.finish if http&.started?
      rescue IOError, SystemCallError
        nil # already closed: nothing to release
      end

      # This thread's connections (a thread-local: no lock, no connection shared by threads).
      def self.mine
        Thread.current[:gitstore_hiera_connections] ||= {}
      end
    end

    # One GET of the node document. Returns the parsed document, or nil for an unknown node
    # when the failure mode is graceful; raises Error for everything else.
    class Client
      def initialize(settings)
        @settings = settings
        @uri = URI(settings.url)
        @key = [settings.url, settings.token, settings.user, settings.password, settings.login].freeze
      end

      # Sent with every request, given when the request is made rather than set one by one
      # over Net::HTTP's defaults (`Accept: */*`, `User-Agent: Ruby`).
      def self.headers
        @headers ||= { 'Accept' => 'application/json',
                       'User-Agent' => "gitstore-hiera (Puppet #{Puppet.version})" }.freeze
      end

      def fetch
        @kept = Revalidation.lookup(@key)
        response = request
        if response.code.to_i == 401 && @settings.login
          KeystoneLogin.forget(@settings.login) # revoked before its expiry: log in again
          response = request
        end
        case response.code.to_i
        when 200 then remember(parse(response), response)
        when 304 then @kept ? @kept[1] : failure('HTTP 304 to a request without an ETag', response)
        when 404 then unknown(response)
        when 422 then failure("unknown version pin #{@settings.version.inspect}", response)
        when 401, 403 then failure('authentication failed (check token, user, password or ' \
                                   'the keystone_* options)', response)
        else failure("HTTP #{response.code}", response)
        end
      end

      private

      def request
        Connections.request(@uri, @settings) { get }
      rescue Net::OpenTimeout, Net::ReadTimeout, Net::WriteTimeout => e
        kind = e.class.name.split('::').last
        raise Error, "#{where}: timed out after #{@settings.timeout}s (#{kind})"
      rescue OpenSSL::SSL::SSLError => e
        # Not a SystemCallError: certificate and handshake failures need their own rescue.
        raise Error, "#{where}: TLS failure: #{e.message}"
      rescue SystemCallError, SocketError, IOError, EOFError, Net::ProtocolError => e
        raise Error, "#{where}: cannot connect: #{e.message}"
      end

      # The GET, made with its headers at once and with the path only (Net::HTTP adds Host;
      # a URI would be copied and rewritten for every request).
      def get
        headers = Client.headers
        extra = {}
        extra['Authorization'] = "Bearer #{@settings.token}" if @settings.token
        extra['X-Auth-Token'] = keystone_token if @settings.login
        extra['If-None-Match'] = @kept[0] if @kept
        get = Net::HTTP::Get.new(@uri.request_uri, extra.empty? ? headers : headers.merge(extra))
        # Net::HTTP's default asks for gzip, which the server does not use: one request
        # header less for both sides to write and parse (a compressed answer would still be
        # decoded).
        get.delete('Accept-Encoding')
        get.basic_auth(@settings.user, @settings.password.to_s) if @settings.user
        get
      end

      def keystone_token
        KeystoneLogin.token(@settings.login, @settings.timeout, @settings.ssl_ca_file)
      end

      def remember(document, response)
        etag = response['ETag']
        Revalidation.store(@key, etag, document) if etag
        document
      end

      def parse(response)
        refuse_masked(response)
        document = JSON.parse(response.body)
        return document if document.is_a?(Hash) && document['resources'].is_a?(Hash)

        raise Error, "#{where}: answered 200 without a node document (no 'resources' object)"
      rescue JSON::ParserError => e
        raise Error, "#{where}: answered 200 with a body that is not JSON: #{e.message[0, 200]}"
      end

      # A caller without the `secrets` role gets "******" for every secret: deploying those
      # as passwords would break services quietly, so a masked document fails the compile.
      def refuse_masked(response)
        masked = response['X-Gitstore-Masked'].to_s.split(',')
        return if masked.empty?

        raise Error, "#{where}: the server masked #{masked.size} secret value(s) " \
                     "(#{masked.first(3).join(', ')}#{masked.size > 3 ? ', ...' : ''}): grant " \
                     "this master's gitstore user the secrets role on environment " \
                     "#{@settings.environment}"
      end

      # 404 is an unknown node only when the server says so; an unknown environment or a wrong
      # URL stays an error in every failure mode.
      def unknown(response)
        body = server_body(response)
        node_missing = Array(body['errors']).any? { |e| e.is_a?(Hash) && e['key'] == 'node' }
        failure('not found', response) unless node_missing
        return nil if @settings.graceful?

        failure("unknown node #{@settings.node.inspect} " \
                '(failure: graceful would serve it no data instead)', response)
      end

      def failure(cause, response)
        message = server_body(response)['message']
        detail = message ? ": #{message}" : ''
        raise Error, "#{where}: #{cause}#{detail}"
      end

      def server_body(response)
        body = JSON.parse(response.body.to_s)
        body.is_a?(Hash) ? body : {}
      rescue JSON::ParserError
        {}
      end

      def where
        "gitstore::data_hash: GET #{@settings.url}"
      end
    end

    # Node documents fetched during one compile, attached to the compiler (Puppet's adapter
    # idiom): Hiera's own `context.cache` lives for one hierarchy level only, so without this
    # every level would make its own request and could see a different commit.
    class CompileMemo < Puppet::Pops::Adaptable::Adapter
      # The document for `settings` (nil: unknown node, graceful), fetched at most once per
      # compile.
      def self.document(context, settings)
        memo = adapt(holder(context))
        memo.fetch(settings) { Client.new(settings).fetch }
      end

      def self.holder(context)
        scope = context.invocation.scope
        scope.respond_to?(:compiler) ? scope.compiler : scope
      end

      def fetch(settings)
        @documents ||= {}
        key = settings.url
        return @documents[key] if @documents.key?(key)

        @documents[key] = yield.tap { |doc| announce(settings, doc) }
      end

      private

      def announce(settings, document)
        if document.nil?
          Puppet.warning("gitstore::data_hash: node #{settings.node.inspect} is unknown in " \
                         "environment #{settings.environment} at #{settings.url}; " \
                         'serving no data (failure: graceful)')
        else
          Puppet.debug { "gitstore::data_hash: #{settings.url} served commit #{document['commit']} (version #{document['version']})" }
        end
      end
    end
  end
end
