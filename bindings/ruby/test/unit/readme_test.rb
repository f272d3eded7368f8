# frozen_string_literal: true

require "test_helper"

# The README's complete example is examples/worker.rb (which test_ruby.py runs), word for word.
class ReadmeTest < Minitest::Test
  def test_the_readme_shows_the_example_worker_verbatim
    readme = File.read(File.join(TaskerTest::RUBY_ROOT, "README.md"))
    example = File.read(File.join(TaskerTest::RUBY_ROOT, "examples", "worker.rb"))
    assert_includes readme, "```ruby\n#{example}```"
  end
end
