"""The statements a PostgreSQL store sends, counted at its cursors (each is a round trip to the server)."""

from __future__ import annotations

from typing import Any

from contextwarden.log.store import PostgresStore


class Counted:
    """The statements a store sends, by SQL text (``BEGIN``/``COMMIT`` for each transaction block)."""

    def __init__(self, store: PostgresStore) -> None:
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

        connect = store._pool._connect

        def counted_connect() -> Any:
            conn = connect()
            conn.cursor_factory = Cursor
            transaction = conn.transaction

            def counted_transaction(*args: Any, **kwargs: Any) -> Any:
                sent.extend(["BEGIN", "COMMIT"])
                return transaction(*args, **kwargs)

            conn.transaction = counted_transaction
            return conn

        store._pool.close()
        store._pool = type(store._pool)(counted_connect, size=store._pool.size)
