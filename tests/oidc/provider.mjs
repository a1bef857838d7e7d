// A real OpenID Connect provider on loopback for the sign-in tests: panva's
// oidc-provider (OpenID Certified), with one confidential client and the
// accounts the tests name.
//
//   node tests/oidc/provider.mjs '<json>'     (or the JSON in OIDC_TEST_PROVIDER)
//
// The JSON: {"port": 0, "clientId": "...", "clientSecret": "...",
//   "redirectUris": [...], "postLogoutRedirectUris": [...],
//   "accounts": {"alice": {"password": "...", "email": "...", "groups": [...], "tamper": null}}}
// Port 0 picks a free one. Once it listens, it prints one line of JSON,
// {"issuer": "http://127.0.0.1:PORT"}, on stdout.
//
// The login page is served here (a form, its password checked against the
// account; the development interactions' own page loads web fonts from
// another origin), its Cancel is the provider's abort. Consent is taken as
// given for the one first-party client, as an organisation's provider does.
//
// For the tests, on the same port:
//   PUT /_test/accounts/<id>  {"password", "email", "groups", "tamper"}  makes or replaces an account.
// An account's "tamper" makes the answers of its next sign-ins bad in one
// way: the ID token "signature" (signed by another key under the same kid),
// "audience" (made for another client), "audiences" (for this client and
// another, without azp), "issuer" (another issuer's), "nonce" (another
// sign-in's), "expired", "no-expiry" (no exp), "hs256" (an HMAC with the
// client secret as its key); or "userinfo" (the userinfo endpoint answering
// for another subject).

import { randomUUID } from 'node:crypto';
import * as querystring from 'node:querystring';

import { SignJWT, decodeJwt, exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const config = JSON.parse(process.argv[2] || process.env.OIDC_TEST_PROVIDER || '{}');
const accounts = new Map(Object.entries(config.accounts || {}));

const kid = 'test-signing-key';
const signing = await generateKeyPair('RS256', { extractable: true });
const stranger = await generateKeyPair('RS256', { extractable: true });
const privateJwk = { ...(await exportJWK(signing.privateKey)), kid, alg: 'RS256', use: 'sig' };

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function page(title, body) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>`
    + `<body><main><h1>${title}</h1>${body}</main></body></html>`;
}

function loginPage(uid) {
  return page('Sign in to the test provider', `<form method="post" action="/interaction/${uid}">
    <input type="hidden" name="prompt" value="login">
    <p><label>Login <input name="login" required autofocus></label></p>
    <p><label>Password <input type="password" name="password" required></label></p>
    <p><button type="submit">Sign in</button> <a href="/interaction/${uid}/abort">Cancel</a></p>
  </form>`);
}

// Listen first, so the issuer carries the port the system picked.
const { createServer } = await import('node:http');
let handler = (req, res) => { res.statusCode = 503; res.end(); };
const server = createServer((req, res) => handler(req, res));
await new Promise((resolve) => server.listen(config.port || 0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: config.clientId,
    client_secret: config.clientSecret,
    redirect_uris: config.redirectUris,
    post_logout_redirect_uris: config.postLogoutRedirectUris || [],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [privateJwk] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'name'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  cookies: { keys: [randomUUID()] },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.body = page('Sign out of the test provider?', `${form}
          <button type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
          <button type="submit" form="op.logoutForm">No, stay signed in</button>`);
      },
      async postLogoutSuccessSource(ctx) {
        ctx.body = page('Signed out of the test provider', '');
      },
    },
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('The test provider refused', `<pre>${JSON.stringify(out).replace(/</g, '&lt;')}</pre>`);
  },
  async findAccount(ctx, id) {
    const account = accounts.get(id);
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          preferred_username: account.username || id,
          name: account.name || id,
          email: account.email,
          email_verified: true,
          groups: account.groups || [],
        };
      },
    };
  },
  // The one client is first-party: its scopes and claims are granted at sign-in.
  async loadExistingGrant(ctx) {
    const accountId = ctx.oidc.session.accountId;
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId });
    grant.addOIDCScope('openid email profile groups');
    grant.addOIDCClaims(['sub', 'email', 'email_verified', 'preferred_username', 'name', 'groups']);
    await grant.save();
    return grant;
  },
});
provider.proxy = false;

// Before the provider's routes: the test controls, and the password check
// the development login form leaves out.
provider.use(async (ctx, next) => {
  const control = ctx.path.match(/^\/_test\/accounts\/([^/]+)$/);
  if (control && ctx.method === 'PUT') {
    accounts.set(decodeURIComponent(control[1]), JSON.parse(await readBody(ctx.req)));
    ctx.status = 204;
    return;
  }
  const interaction = ctx.path.match(/^\/interaction\/([^/]+)$/);
  if (interaction && ctx.method === 'GET') {
    const { uid, prompt } = await provider.interactionDetails(ctx.req, ctx.res);
    if (prompt.name === 'login') {
      ctx.type = 'html';
      ctx.body = loginPage(uid);
      return;
    }
  }
  if (interaction && ctx.method === 'POST') {
    const form = querystring.parse(await readBody(ctx.req));
    const account = accounts.get(String(form.login || ''));
    if (!account || account.password !== form.password) {
      ctx.status = 401;
      ctx.type = 'html';
      ctx.body = page('Wrong login or password', '<p><a href="javascript:history.back()">Back</a></p>');
      return;
    }
    await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: String(form.login) } }, {
      mergeWithLastSubmission: false,
    });
    ctx.respond = false;
    return;
  }
  await next();
  if (ctx.path === '/token' && ctx.status === 200 && ctx.body && ctx.body.id_token) {
    ctx.body = { ...ctx.body, id_token: await tampered(ctx.body.id_token) };
  }
  if (ctx.path === '/me' && ctx.status === 200 && ctx.body && accounts.get(ctx.body.sub)?.tamper === 'userinfo') {
    ctx.body = { ...ctx.body, sub: 'someone-else' };
  }
});

async function tampered(idToken) {
  const claims = decodeJwt(idToken);
  const mode = accounts.get(claims.sub)?.tamper;
  if (!mode || mode === 'userinfo') return idToken;
  let key = signing.privateKey;
  let alg = 'RS256';
  const now = Math.floor(Date.now() / 1000);
  if (mode === 'signature') key = stranger.privateKey;
  else if (mode === 'audience') claims.aud = 'another-client';
  else if (mode === 'audiences') {
    claims.aud = [config.clientId, 'another-client'];
    delete claims.azp;
  } else if (mode === 'issuer') claims.iss = 'http://127.0.0.1:1';
  else if (mode === 'nonce') claims.nonce = 'another-sign-in';
  else if (mode === 'expired') Object.assign(claims, { iat: now - 7200, exp: now - 3600 });
  else if (mode === 'no-expiry') delete claims.exp;
  else if (mode === 'hs256') {
    key = new TextEncoder().encode(config.clientSecret);
    alg = 'HS256';
  } else throw new Error(`unknown tamper mode ${mode}`);
  return new SignJWT(claims).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(key);
}

handler = provider.callback();
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    // Keep-alive connections of the tests' clients would hold close() open.
    server.closeAllConnections();
  });
}
