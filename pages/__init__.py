"""What the owner's pages (web) and the public pages (links, collect) share:
the headers every page carries, the upload form, how an owner is named.
Below every app that serves pages, above the domain it asks."""
