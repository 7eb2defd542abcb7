"""The statements a store sends: a PostgreSQL store's at its cursors (each is a round trip to the server), the
proxy's SQLite tables' at their connection."""

from __future__ import annotations

from typing import Any


class Counted:
    """The statements sent through ``owner``'s connection pool (a PostgreSQL store, the proxy's tables), by SQL text,
    or through its one SQLite connection (the proxy's tables on SQLite, as SQLite runs them).

    A transaction block counts as ``BEGIN`` and ``COMMIT``; an ``executemany`` (pipelined) as one.
    """

    def __init__(self, owner: Any) -> None:
        self.sent: list[str] = []
        sent = self.sent
        if owner._pool is None:
            owner._conn.set_trace_callback(sent.append)
            return

        import psycopg

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
