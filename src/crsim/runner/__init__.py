"""Running experiments: build (config -> objects), loop (one dialogue), batch (a run folder), executors."""
