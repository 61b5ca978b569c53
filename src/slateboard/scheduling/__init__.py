"""Scheduling: rules, agenda, stages and control units."""
