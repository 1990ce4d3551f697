"""Environments: the Env interface, gymnasium adapters and toy environments."""
