"""Sign-in through an OpenID Connect provider, with mozilla-django-oidc
(docs/signin.md says why that library).

In layers, lowest first: `config` (on or off, and the library's settings
taken from ours), `refusals` (every way a sign-in is refused, and its page),
`discovery` (the provider's endpoints), `claims` (who the provider says
the user is, and the roles their groups give), `accounts` (that identity's
account here), `backend` (the code exchanged, the ID token checked),
`views`, `button` and `logout` (the pages), `urls`.
"""
