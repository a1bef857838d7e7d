"""The benchmarks' own tests: each benchmark run end to end at smoke sizes,
and its figures and target checks on made-up data (marked `bench`)."""
