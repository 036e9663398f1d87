# frozen_string_literal: true

# Keystone credentials exchanged for a token (POST /v3/auth/tokens), for the gitstore Hiera
# backend. A Puppet server compiles many catalogs in one Ruby process: the token is kept per
# login and reused by every compile until shortly before it expires, then a new one is issued,
# so a compile never starts with a token about to lapse and Keystone sees one login per token
# lifetime, not one per compile.

require 'json'
require 'net/http'
require 'openssl'
require 'time'
require 'uri'

module PuppetX
  module Gitstore
    # One Keystone identity (password method, project scope) from a hierarchy's options.
    Login = Struct.new(:auth_url, :user, :password, :project, :user_domain, :project_domain,
                       keyword_init: true) do
      def key
        [auth_url, user, project, user_domain, project_domain]
      end

      def tokens_url
        base = auth_url.chomp('/')
        base.end_with?('/v3') ? "#{base}/auth/tokens" : "#{base}/v3/auth/tokens"
      end
    end

    # Tokens issued for each login of this process.
    module KeystoneLogin
      # Refresh this long before expiry (or at three quarters of a shorter token's lifetime).
      REFRESH_BEFORE = 300
      Issued = Struct.new(:token, :expires_at, :refresh_at)
      @issued = {}
      @mutex = Mutex.new

      class << self
        # A token of `login` valid for a while yet; issues a new one when needed.
        def token(login, timeout, ssl_ca_file, now: Time.now)
          @mutex.synchronize do
            held = @issued[login.key]
            return held.token if held && now < held.refresh_at

            @issued[login.key] = issue(login, timeout, ssl_ca_file)
            @issued[login.key].token
          end
        end

        # Drop the token of `login` (gitstore refused it: revoked), so the next call issues one.
        def forget(login)
          @mutex.synchronize { @issued.delete(login.key) }
        end

        private

        def issue(login, timeout, ssl_ca_file)
          uri = URI(login.tokens_url)
          response = post(uri, body(login), timeout, ssl_ca_file, login)
          unless response.code.to_i == 201 && response['X-Subject-Token']
            raise Error, "#{where(login)}: Keystone answered HTTP #{response.code} " \
                         "#{response.body.to_s[0, 200]}"
          end
          issued(response, login)
        end

        def issued(response, login)
          data = JSON.parse(response.body)['token']
          expires = Time.iso8601(data['expires_at'])
          lifetime = expires - Time.iso8601(data['issued_at'])
          Issued.new(response['X-Subject-Token'], expires,
                     expires - [REFRESH_BEFORE, lifetime / 4].min)
        rescue JSON::ParserError, ArgumentError, TypeError, NoMethodError => e
          raise Error, "#{where(login)}: Keystone's answer has no token expiry: #{e.message}"
        end

        def body(login)
          user = { 'name' => login.user, 'password' => login.password,
                   'domain' => { 'name' => login.user_domain } }
          scope = { 'project' => { 'name' => login.project,
                                   'domain' => { 'name' => login.project_domain } } }
          auth = { 'identity' => { 'methods' => ['password'], 'password' => { 'user' => user } } }
          auth['scope'] = scope if login.project
          JSON.generate('auth' => auth)
        end

        def post(uri, body, timeout, ssl_ca_file, login)
          http = Net::HTTP.new(uri.host, uri.port)
          http.use_ssl = uri.scheme == 'https'
          http.ca_file = ssl_ca_file if http.use_ssl? && ssl_ca_file
          http.open_timeout = http.read_timeout = http.write_timeout = timeout
          http.max_retries = 0
          request = Net::HTTP::Post.new(uri)
          request['Content-Type'] = 'application/json'
          request['User-Agent'] = "gitstore-hiera (Puppet #{Puppet.version})"
          request.body = body
          http.start { |h| h.request(request) }
        rescue Net::OpenTimeout, Net::ReadTimeout, Net::WriteTimeout, OpenSSL::SSL::SSLError,
               SystemCallError, SocketError, IOError, EOFError, Net::ProtocolError => e
          raise Error, "#{where(login)}: cannot reach Keystone: #{e.message}"
        end

        def where(login)
          "gitstore::data_hash: Keystone login of #{login.user.inspect} at #{login.tokens_url}"
        end
      end
    end
  end
end
