# frozen_string_literal: true

require "json"
require "net/http"
require "uri"

module TaskerCore
  module StepHandler
    module Mixins
      # HTTP for handlers (Net::HTTP, stdlib only). Configured by the handler's config (the
      # template's handler.initialization): "url" (base URL), "timeout" (read, seconds, default 30),
      # "open_timeout" (default 10), "headers", "auth" ({"type" => "bearer", "token"} or
      # {"type" => "api_key", "token", "api_key_header"} or {"type" => "basic", "username", "password"}).
      #
      # get/post/put/delete return the Response on 2xx/3xx and raise otherwise, classified as
      # upstream does: 4xx a PermanentError, 429 and 5xx a RetryableError (with Retry-After), no
      # answer (refused, timeout) a RetryableError.
      module API
        # An HTTP answer: status, headers (lower-case names), body (parsed JSON when it is JSON).
        Response = Struct.new(:status, :headers, :body, :raw_body, keyword_init: true) do
          def success? = status.between?(200, 299)
        end

        # Network failures that may pass.
        NETWORK_ERRORS = [Net::OpenTimeout, Net::ReadTimeout, Errno::ECONNREFUSED, Errno::ECONNRESET,
                          Errno::EHOSTUNREACH, Errno::ENETUNREACH, SocketError, EOFError, IOError].freeze

        def capabilities = super + %w[http api]

        def get(path, params: {}, headers: {}) = process_response(http_request(:get, path, params: params, headers: headers))
        def delete(path, params: {}, headers: {}) = process_response(http_request(:delete, path, params: params, headers: headers))
        def post(path, data: {}, headers: {}) = process_response(http_request(:post, path, data: data, headers: headers))
        def put(path, data: {}, headers: {}) = process_response(http_request(:put, path, data: data, headers: headers))

        # Sends one request and returns the Response whatever its status.
        #
        # @raise [RetryableError] no answer (connection refused, timeout, reset)
        def http_request(method, path, params: {}, data: nil, headers: {})
          uri = request_uri(path, params)
          request = Net::HTTP.const_get(method.to_s.capitalize).new(uri)
          api_headers.merge(headers.to_h.transform_keys(&:to_s)).each { |name, value| request[name] = value.to_s }
          unless data.nil?
            request["Content-Type"] ||= "application/json"
            request.body = data.is_a?(String) ? data : JSON.generate(data)
          end
          answer = Net::HTTP.start(uri.host, uri.port, use_ssl: uri.scheme == "https",
                                                       open_timeout: api_setting("open_timeout", 10).to_f,
                                                       read_timeout: api_setting("timeout", 30).to_f,
                                                       write_timeout: api_setting("timeout", 30).to_f) do |http|
            http.request(request)
          end
          to_response(answer)
        rescue *NETWORK_ERRORS => e
          raise RetryableError.new("#{method.to_s.upcase} #{uri}: #{e.class}: #{e.message}", error_category: "network")
        end

        # Raises for a failed Response (see the module doc); returns it otherwise.
        def process_response(response)
          return response if response.status < 400

          context = { "status" => response.status, "body" => response.body }
          if response.status == 429 || response.status >= 500
            raise RetryableError.new("HTTP #{response.status}", retry_after: retry_after(response),
                                                                error_category: response.status == 429 ? "rate_limit" : "server_error",
                                                                context: context)
          end
          raise PermanentError.new("HTTP #{response.status}", error_code: "HTTP_#{response.status}",
                                                              error_category: client_error_category(response.status),
                                                              context: context)
        end

        # A success carrying an API answer.
        def api_success(data:, status: 200, headers: {}, execution_time_ms: nil, metadata: {})
          result = { "data" => data, "status" => status, "headers" => headers }
          result["execution_time_ms"] = execution_time_ms if execution_time_ms
          success(result: result, metadata: metadata.to_h.merge("api_call" => true))
        end

        # A failure classified by `status`: 4xx PermanentError (not retried), 429/5xx RetryableError.
        def api_failure(message:, status: nil, error_type: nil, headers: {}, metadata: {})
          failure(message: message, error_type: error_type || error_type_for(status), retryable: retryable_status?(status),
                  metadata: metadata.to_h.merge("api_call" => true, "status" => status, "headers" => headers).compact)
        end

        # Whether an answer with `status` is worth retrying (429 and 5xx).
        def retryable_status?(status) = !status.nil? && (status >= 500 || status == 429)

        private

        def error_type_for(status)
          case status
          when 429, 500..599 then "RetryableError"
          when 400..499 then "PermanentError"
          else "UnexpectedError"
          end
        end

        def client_error_category(status)
          case status
          when 400, 422 then "validation"
          when 401, 403 then "authorization"
          when 404 then "not_found"
          else "client_error"
          end
        end

        def api_setting(key, default = nil)
          value = config[key]
          value.nil? ? default : value
        end

        def request_uri(path, params)
          base = api_setting("url") || api_setting("base_url")
          uri = base ? URI.join(base.to_s.end_with?("/") ? base.to_s : "#{base}/", path.to_s.sub(%r{\A/}, "")) : URI(path.to_s)
          raise PermanentError.new("#{uri} is not an http(s) URL", error_category: "configuration") unless uri.is_a?(URI::HTTP)

          query = params.to_h.map { |k, v| [k.to_s, v.to_s] }
          uri.query = URI.encode_www_form(URI.decode_www_form(uri.query || "") + query) unless query.empty?
          uri
        end

        def api_headers
          headers = { "Accept" => "application/json" }.merge(api_setting("headers", {}).to_h.transform_keys(&:to_s))
          auth = api_setting("auth", {}).to_h.transform_keys(&:to_s)
          case auth["type"]
          when "bearer" then headers["Authorization"] = "Bearer #{auth['token']}" if auth["token"]
          when "api_key" then headers[auth["api_key_header"] || "X-API-Key"] = auth["token"] if auth["token"]
          when "basic"
            headers["Authorization"] = "Basic #{["#{auth['username']}:#{auth['password']}"].pack('m0')}" if auth["username"]
          end
          headers
        end

        def to_response(answer)
          headers = answer.each_header.to_h
          raw = answer.body.to_s
          body = headers["content-type"].to_s.include?("json") && !raw.empty? ? parse_json(raw) : raw
          Response.new(status: answer.code.to_i, headers: headers, body: body, raw_body: raw)
        end

        def parse_json(raw)
          JSON.parse(raw)
        rescue JSON::ParserError
          raw
        end

        def retry_after(response)
          value = response.headers["retry-after"]
          value&.match?(/\A\d+\z/) ? value.to_i : nil
        end
      end
    end
  end
end
