#!/usr/bin/env bash
# The SSO tests' OpenID provider: npm's oidc-provider (an OpenID Certified implementation), installed
# outside the checkout (tests/sso/oidc_provider.mjs is the config; tests find it through
# DEEPREPO_OIDC_PROVIDER_DIR, default /opt/deeprepo-oidc). Node.js comes from Debian when absent.
set -euo pipefail
DIR="${DEEPREPO_OIDC_PROVIDER_DIR:-/opt/deeprepo-oidc}"
VERSION=9.13.3

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm
fi
installed="$DIR/node_modules/oidc-provider/package.json"
if [ -f "$installed" ] && grep -q "\"version\": \"$VERSION\"" "$installed"; then
  exit 0
fi
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name": "deeprepo-oidc-test-provider", "private": true}' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "oidc-provider@$VERSION"
