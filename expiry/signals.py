"""Signals the expiry daemon sends.

shares_expired is sent once per committed expiry batch, after the commit, with
exactly the ids that batch's UPDATE ... RETURNING changed: a share expired by
another daemon, or renewed meanwhile, is never in it. Receivers therefore see
each expiry exactly once across any number of daemons, and never one that
rolled back. Arguments: share_ids (list of int), ended_at (aware datetime).
"""

from django.dispatch import Signal

shares_expired = Signal()
