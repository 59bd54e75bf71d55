// A real OpenID provider for the gateway's sign-in tests: npm's oidc-provider (certified), with
// its development login and consent pages (devInteractions), one client and a few accounts.
// Usage: node provider.mjs CONFIG_JSON, where CONFIG_JSON is
//   {"client_id", "client_secret", "redirect_uri", "accounts": PATH}, and the file at PATH holds
//   {"login": {claims...}}: read at each sign-in, so a test can change what the provider says.
// It listens on a free port of 127.0.0.1 and prints "listening <issuer>" once it does.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const config = JSON.parse(process.argv[2]);
const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: config.client_id,
    client_secret: config.client_secret,
    redirect_uris: [config.redirect_uri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  conformIdTokenClaims: false, // the scopes' claims go in the ID token, not only in userinfo
  pkce: { required: () => true },
  cookies: { keys: ['test-only-cookie-key-1234567890'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const accounts = JSON.parse(readFileSync(config.accounts, 'utf8'));
    const claims = accounts[id] ?? { email: `${id}@example.com`, email_verified: false };
    return { accountId: id, async claims() { return { sub: id, ...claims }; } };
  },
});
server.on('request', provider.callback());
process.stdout.write(`listening ${issuer}\n`);
