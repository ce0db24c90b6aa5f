// A certified OpenID provider (panva's oidc-provider) on 127.0.0.1 for the single sign-on
// tests (tests/support/oidc_provider.py starts it). One confidential client, from the
// environment: OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URIS (comma-separated).
// Accounts come from OIDC_ACCOUNTS, a JSON file read at every login ({"alice": {"email":
// ..., "groups": [...]}}), so a test changes a user's groups between two logins. The login
// form is the library's development one (any password). The client's ID tokens are signed
// OIDC_ALG: RS256 (the default) or ES256 with a fresh key, or HS256 with the client secret.
// On a free port; prints `issuer <url>` when ready.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const alg = process.env.OIDC_ALG || 'RS256';
const keyAlg = alg === 'ES256' ? 'ES256' : 'RS256';
const { privateKey } = keyAlg === 'ES256'
  ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
  : crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = {
  ...privateKey.export({ format: 'jwk' }), alg: keyAlg, use: 'sig', kid: crypto.randomUUID(),
};

const accounts = () => JSON.parse(fs.readFileSync(env('OIDC_ACCOUNTS'), 'utf8'));

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: env('OIDC_CLIENT_ID'),
      client_secret: env('OIDC_CLIENT_SECRET'),
      redirect_uris: env('OIDC_REDIRECT_URIS').split(','),
      grant_types: ['authorization_code'],
      response_types: ['code'],
      id_token_signed_response_alg: alg,
    }],
    jwks: { keys: [jwk] },
    enabledJWA: { idTokenSigningAlgValues: ['RS256', 'ES256', 'HS256'] },
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'given_name', 'family_name'],
      groups: ['groups'],
    },
    scopes: ['openid', 'email', 'profile', 'groups'],
    // The relying party must send a code challenge (S256), as ours does.
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    async findAccount(ctx, sub) {
      const claims = accounts()[sub];
      if (!claims) return undefined;
      return { accountId: sub, async claims() { return { sub, ...claims }; } };
    },
  });
  // Plain http on loopback: the library would otherwise refuse to set its cookies.
  provider.proxy = false;
  server.on('request', provider.callback());
  console.log(`issuer ${issuer}`);
});
// At once: a browser's kept-alive connections would hold server.close() open.
process.on('SIGTERM', () => process.exit(0));
