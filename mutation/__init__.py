"""A mutation run over the modules that hold the project's rules (`make mutants`).

Each mutant (mutation.operators) is one small change to one module; it is
run against the test files that cover that module (mutation.config) on
SQLite, and should make one of them fail (killed). One that passes them all
(survived) is a change of behaviour no test notices, or a change that cannot
alter behaviour (equivalent: listed with its reason in mutation.config and
docs/testing.md). The working tree is never touched: mutants are written
into copies of the tracked files in a temporary directory.
"""
