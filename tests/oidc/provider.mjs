// A real OpenID provider (npm oidc-provider) on 127.0.0.1, for tests/e2e/test_oauth.py.
//
//   node tests/oidc/provider.mjs CONFIG.json
//
// CONFIG.json: {
//   "port": 0,                                  // 0: any free port
//   "keys": [<private JWK>, ...],               // signing keys; the first signs, all are published
//   "clients": [{"client_id", "client_secret", "scope"}],  // client-credentials clients
//   "resources": {"<resource indicator>": {"audience", "scope"}}  // resource servers; JWT access tokens
// }
// Prints one line to stdout once it listens: {"issuer": "http://127.0.0.1:PORT"}. Stops on SIGTERM.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));

const server = createServer();
await new Promise((resolve, reject) => {
	server.once('error', reject);
	server.listen(config.port ?? 0, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
	jwks: { keys: config.keys },
	clients: config.clients.map((c) => ({
		client_id: c.client_id,
		client_secret: c.client_secret,
		grant_types: ['client_credentials'],
		redirect_uris: [],
		response_types: [],
		token_endpoint_auth_method: 'client_secret_post',
		scope: c.scope,
	})),
	scopes: [...new Set(Object.values(config.resources).flatMap((r) => r.scope.split(' ')))],
	features: {
		devInteractions: { enabled: false },
		clientCredentials: { enabled: true },
		resourceIndicators: {
			enabled: true,
			defaultResource: (_ctx, _client, oneOf) => oneOf ?? Object.keys(config.resources)[0],
			useGrantedResource: () => true,
			getResourceServerInfo: (_ctx, indicator) => {
				const resource = config.resources[indicator];
				if (!resource) throw new Provider.errors.InvalidTarget(`unknown resource ${indicator}`);
				return {
					audience: resource.audience,
					scope: resource.scope,
					accessTokenTTL: 300,
					accessTokenFormat: 'jwt',
					jwt: { sign: { alg: config.keys[0].alg ?? 'RS256' } },
				};
			},
		},
	},
});
provider.on('server_error', (_ctx, err) => console.error('oidc-provider:', err));
server.on('request', provider.callback());

process.on('SIGTERM', () => {
	server.close();
	server.closeAllConnections();
	process.exit(0);
});
console.log(JSON.stringify({ issuer }));
