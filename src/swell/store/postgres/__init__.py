"""The Postgres backend (`pip install 'swell[postgres]'`): `store.PostgresStore`, its
migrations, its projections (SQLite's, with Postgres's upserts) and paged queries.

Only `store.location` imports it, when a store URL names Postgres: psycopg is loaded
then and never otherwise.
"""
