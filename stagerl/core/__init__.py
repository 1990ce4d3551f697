"""The staged run loop: dispatch, stages, run, hooks and conditions."""
