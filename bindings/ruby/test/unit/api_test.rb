# frozen_string_literal: true

require "test_helper"
require "socket"

# The Api capability against a tiny local HTTP server answering canned responses.
class ApiTest < Minitest::Test
  class Fetch < TaskerCore::StepHandler::Api; end

  def setup
    @server = TCPServer.new("127.0.0.1", 0)
    @requests = Queue.new
    @thread = Thread.new { serve }
    @handler = Fetch.new(config: { "url" => "http://127.0.0.1:#{@server.addr[1]}/api", "timeout" => 5,
                                   "auth" => { "type" => "bearer", "token" => "t0k" } })
  end

  def teardown
    @server.close
    @thread.join(5)
  end

  def test_get_parses_json_and_sends_auth_and_params
    response = @handler.get("/items", params: { "status" => "200", "limit" => 2 })
    assert_equal 200, response.status
    assert_equal({ "ok" => true }, response.body)
    request = @requests.pop
    assert_match %r{\AGET /api/items\?status=200&limit=2 HTTP/1.1}, request
    assert_match(/^authorization: Bearer t0k/i, request)
  end

  def test_post_sends_json
    @handler.post("/items?status=201", data: { "name" => "x" })
    assert_match(/"name":"x"/, @requests.pop)
  end

  def test_client_errors_are_permanent_and_server_errors_retryable
    error = assert_raises(TaskerCore::PermanentError) { @handler.get("/x", params: { "status" => "404" }) }
    assert_equal "HTTP_404", error.error_code
    limited = assert_raises(TaskerCore::RetryableError) { @handler.get("/x", params: { "status" => "429" }) }
    assert_equal 7, limited.retry_after
    assert_raises(TaskerCore::RetryableError) { @handler.get("/x", params: { "status" => "503" }) }
    failed = TaskerCore::Types::StepHandlerCallResult.from_exception(error)
    assert_equal ["PermanentError", false], [failed.error_type, failed.retryable]
  end

  def test_api_failure_classifies_by_status
    assert_equal ["PermanentError", false], @handler.api_failure(message: "m", status: 422).then { |f| [f.error_type, f.retryable] }
    assert_equal ["RetryableError", true], @handler.api_failure(message: "m", status: 429).then { |f| [f.error_type, f.retryable] }
    assert_equal ["RetryableError", true], @handler.api_failure(message: "m", status: 500).then { |f| [f.error_type, f.retryable] }
    assert_equal({ "data" => [1], "status" => 200, "headers" => {} }, @handler.api_success(data: [1]).result)
  end

  def test_no_answer_is_retryable
    port = TCPServer.new("127.0.0.1", 0).then { |s| s.addr[1].tap { s.close } }
    handler = Fetch.new(config: { "url" => "http://127.0.0.1:#{port}", "open_timeout" => 2 })
    error = assert_raises(TaskerCore::RetryableError) { handler.get("/") }
    assert_match(/ECONNREFUSED|refused/i, error.message)
  end

  private

  # Answers each request with the status named by its `status` query parameter (default 200).
  def serve
    loop do
      client = @server.accept
      head = +""
      while (line = client.gets) && line != "\r\n"
        head << line
      end
      length = head[/^content-length: (\d+)/i, 1].to_i
      head << client.read(length) if length.positive?
      @requests << head
      status = head[/status=(\d+)/, 1] || "200"
      body = JSON.generate({ "ok" => status.start_with?("2") })
      client.write("HTTP/1.1 #{status} X\r\nContent-Type: application/json\r\nRetry-After: 7\r\n" \
                   "Content-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
      client.close
    end
  rescue IOError, Errno::EBADF
    nil
  end
end
