# Run minitest / test-unit test files and report every test in minitest's verbose form.
#
# Usage: ruby -Ilib -Itest ruby_tests.rb FILE...
#
# minitest prints "TestX#test_y = 0.00 s = ." itself (ARGV is set to -v). test-unit's console
# output has no such lines, so each Test::Unit::TestCase run is wrapped here to print the same
# form (status from the result's failure / error / pending / omission counters; a leading newline
# keeps it off a progress-dot line), and a "N runs, A assertions, F failures, E errors, S skips"
# summary is printed after test-unit's own run (this at_exit hook is registered before test-unit's,
# so it runs after it). Both are what the minitest_log parser reads.

$swemint_tu = { runs: 0, assertions: 0, failures: 0, errors: 0, skips: 0, used: false }
at_exit do
  s = $swemint_tu
  if s[:used]
    puts "\n#{s[:runs]} runs, #{s[:assertions]} assertions, #{s[:failures]} failures, " \
         "#{s[:errors]} errors, #{s[:skips]} skips"
  end
end

files = ARGV.dup
ARGV.replace(['-v'])

# The wrapper is prepended after the files load: requiring test/unit here would register its
# at_exit runner before a helper's minitest/autorun, and minitest's exit would then stop it.
module SwemintTestUnit
  def run(result, &block)
    counts = lambda do
      [result.failure_count, result.error_count,
       (result.respond_to?(:pending_count) ? result.pending_count : 0) +
         (result.respond_to?(:omission_count) ? result.omission_count : 0),
       result.assertion_count]
    end
    before = counts.call
    started = Time.now
    super
  ensure
    after = counts.call
    ch = if after[1] > before[1] then 'E'
         elsif after[0] > before[0] then 'F'
         elsif after[2] > before[2] then 'S'
         else '.'
         end
    name = respond_to?(:local_name) ? local_name : method_name
    s = $swemint_tu
    s[:used] = true
    s[:runs] += 1
    s[:assertions] += after[3] - before[3]
    s[:failures] += 1 if ch == 'F'
    s[:errors] += 1 if ch == 'E'
    s[:skips] += 1 if ch == 'S'
    $stdout.puts "\n#{self.class.name}##{name} = #{format('%.2f', Time.now - started)} s = #{ch}"
    $stdout.flush
  end
end

files.each { |f| require File.expand_path(f) }
Test::Unit::TestCase.prepend(SwemintTestUnit) if defined?(Test::Unit::TestCase)
