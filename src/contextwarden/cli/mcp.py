"""``contextwarden mcp``: recall, history search and the window view for agents behind the proxy."""

from __future__ import annotations

import os

import click

from ._common import open_existing_store, store_option


@click.command(name="mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: the client starts the server; http: serve streamable HTTP at http://HOST:PORT/mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (http).")
@click.option("--port", default=8788, show_default=True, type=click.IntRange(0, 65535), help="Port (http).")
@click.option(
    "--max-answer-chars",
    type=click.IntRange(min=1_000),
    default=None,
    help="Longest recall answer in characters (longer outputs are recalled by line ranges); default 100,000.",
)
@click.option(
    "--credential-env",
    metavar="NAME",
    default=None,
    help="Serve only the sessions the proxy filed under the credential in this environment variable "
    "(ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY...; salted as the proxy does: CONTEXTWARDEN_PROXY_SALT, "
    "else the salt the proxy keeps in the store).",
)
@store_option
def command(
    transport: str,
    host: str,
    port: int,
    max_answer_chars: int | None,
    credential_env: str | None,
    store_url: str | None,
) -> None:
    """Serve the proxy's session store over MCP: recall, search_history, window (see docs/proxy.md)."""
    from ..proxy.mcp import build_server
    from ..proxy.recall import MAX_ANSWER_CHARS, Credential
    from ..proxy.serve import LOCAL_HOSTS
    from ..proxy.settings import settings_from_env

    if transport == "http" and host not in LOCAL_HOSTS:
        raise click.UsageError(f"refusing to listen on {host}: the MCP server serves localhost only")
    credential = None
    if credential_env is not None:
        secret = os.environ.get(credential_env, "")
        if not secret:
            raise click.UsageError(f"--credential-env {credential_env}: that environment variable is not set")
        credential = Credential(secret=secret, salt=settings_from_env().salt or _store_salt(store_url))
    store = open_existing_store(store_url)
    try:
        server = build_server(store, max_answer_chars=max_answer_chars or MAX_ANSWER_CHARS, credential=credential)
        if transport == "stdio":
            server.run("stdio")
        else:
            click.echo(f"contextwarden mcp on http://{host}:{port}/mcp", err=True)
            server.run("streamable-http", host=host, port=port)
    finally:
        store.close()


def _store_salt(store_url: str | None) -> str:
    """The salt the proxy keeps in the store (written there by the first proxy that opened it)."""
    from ..proxy._db import ProxyDB
    from ..proxy.access import deployment_salts

    db = ProxyDB(store_url)
    try:
        return deployment_salts(db)[0]
    finally:
        db.close()
