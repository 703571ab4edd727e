"""An MCP server that demands OAuth (not a test module): the SDK's ``MCPServer`` with its own
authorization server (client registration, authorize, token) that consents at once.

Usage: python -m tests.mcp_oauth_server <port> oauth|bearer

``bearer`` accepts only the static token ``let-me-in`` (no authorization server).
"""

from __future__ import annotations

import secrets
import sys
import time

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenVerifier,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl


class ConsentingProvider:
    """Registers any client, consents to every authorization, issues opaque tokens."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        assert client.client_id is not None
        code = AuthorizationCode(
            code=secrets.token_hex(12),
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        token = secrets.token_hex(16)
        self.tokens[token] = AccessToken(
            token=token,
            client_id=authorization_code.client_id,
            scopes=authorization_code.scopes,
            expires_at=int(time.time()) + 3600,
            resource=authorization_code.resource,
        )
        return OAuthToken(access_token=token, token_type="Bearer", expires_in=3600, scope="mcp")

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        raise NotImplementedError

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise NotImplementedError


class StaticToken(TokenVerifier):
    async def verify_token(self, token: str) -> AccessToken | None:
        if token != "let-me-in":
            return None
        return AccessToken(token=token, client_id="static", scopes=["mcp"])


def main() -> None:
    port, kind = int(sys.argv[1]), sys.argv[2]
    base = f"http://127.0.0.1:{port}"
    settings = AuthSettings(
        issuer_url=AnyHttpUrl(base),
        resource_server_url=AnyHttpUrl(f"{base}/mcp"),
        validate_token_resource=False,
        required_scopes=["mcp"],
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
        ),
    )
    if kind == "oauth":
        mcp = MCPServer(
            "secure", auth=settings, auth_server_provider=ConsentingProvider(), log_level="CRITICAL"
        )
    else:
        mcp = MCPServer("secure", auth=settings, token_verifier=StaticToken(), log_level="CRITICAL")

    @mcp.tool()
    def whoami() -> str:
        """Who the bearer token belongs to."""
        token = get_access_token()
        return token.client_id if token is not None else "nobody"

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    mcp.run("streamable-http", host="127.0.0.1", port=port, transport_security=security)


if __name__ == "__main__":
    main()
