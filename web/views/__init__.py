"""The owner pages' views, one module a concern: sign-in, the dashboard,
files, shares. Each reads or asks the models; none writes a share itself."""
