"""Report building: tables from case records, and their CSV / JSON renderings."""
