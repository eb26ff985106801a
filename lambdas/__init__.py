"""Thin Lambda handlers: parse the event, call the core library, return. Powertools lives here."""
