"""Sign-in for teams: the ways in besides a local password, and whose session lives."""
