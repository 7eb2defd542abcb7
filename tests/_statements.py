"""The statements a PostgreSQL store sends, counted at its cursors (each is a round trip to the server)."""

from __future__ import annotations

from typing import Any


class Counted:
    """The statements sent through ``owner``'s connection pool (a PostgreSQL store, the proxy's tables), by SQL text.

    A transaction block counts as ``BEGIN`` and ``COMMIT``; an ``executemany`` (pipelined) as one.
    """

    def __init__(self, owner: Any) -> None:
        import psycopg

        self.sent: list[str] = []
        sent = self.sent

        class Cursor(psycopg.Cursor[Any]):
            def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                sent.append(str(query))
                return super().execute(query, *args, **kwargs)

            def executemany(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                sent.append(str(query))  # pipelined: one round trip for the lot
                return super().executemany(query, *args, **kwargs)

        connect = owner._pool._connect

        def counted_connect() -> Any:
            conn = connect()
            conn.cursor_factory = Cursor
            transaction = conn.transaction

            def counted_transaction(*args: Any, **kwargs: Any) -> Any:
                sent.extend(["BEGIN", "COMMIT"])
                return transaction(*args, **kwargs)

            conn.transaction = counted_transaction
            return conn

        owner._pool.close()
        owner._pool = type(owner._pool)(counted_connect, size=owner._pool.size)
