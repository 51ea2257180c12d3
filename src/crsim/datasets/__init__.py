"""Dataset converters: one module per dataset, each a `DatasetReader` registered with `@dataset`."""
