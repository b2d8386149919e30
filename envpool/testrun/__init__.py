"""Test runs and their results: runners' reports parsed into `{test_id: TestStatus}`."""
