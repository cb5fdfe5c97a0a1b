// A real OpenID provider for the SSO tests: npm's oidc-provider (installed by .ci/install-oidc.sh
// outside the checkout), on loopback, with one confidential client that must use PKCE.
// Everything comes from the environment the test sets:
//   OIDC_PROVIDER_DIR   where `npm install oidc-provider` put node_modules
//   OIDC_PORT           the port to listen on (127.0.0.1 only)
//   OIDC_CLIENT         {"client_id", "client_secret", "redirect_uris", "post_logout_redirect_uris"}
//   OIDC_ACCOUNTS       {"<login>": {"email", "name", "groups": [...]}}
// Logins go through the library's development interactions (any password): the test exercises the
// relying party, not a password store.
import path from 'node:path';

const dir = process.env.OIDC_PROVIDER_DIR;
const { default: Provider } = await import(path.join(dir, 'node_modules/oidc-provider/lib/index.js'));

const port = Number(process.env.OIDC_PORT);
const client = JSON.parse(process.env.OIDC_CLIENT);
const accounts = JSON.parse(process.env.OIDC_ACCOUNTS);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [{
    ...client,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  // Refuse any authorization request without a code challenge: the tests prove the RP sends one.
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  cookies: { keys: ['deeprepo-test-only-cookie-key'] },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  async findAccount(_ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id, email: account.email, email_verified: true, name: account.name,
          preferred_username: id, groups: account.groups,
        };
      },
    };
  },
  // A first-party client: grant what it asks without a consent screen (a lab's IdP does the same).
  async loadExistingGrant(ctx) {
    const known = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (known) return ctx.oidc.provider.Grant.find(known);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});
