"""Alembic environment: runs on the connection memagg.db.migration gives."""
from alembic import context

from memagg.db.sqlalchemy import models

config = context.config
target_metadata = models.Base.metadata


def run_migrations_online():
    connection = config.attributes['connection']
    context.configure(connection=connection, target_metadata=target_metadata,
                      render_as_batch=connection.dialect.name == 'sqlite')
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
