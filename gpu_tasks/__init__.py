"""The GPU scoring task: the container AWS Batch runs for the Score step of large runs."""
