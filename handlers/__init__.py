"""Thin operation handlers, one module per resource group, named by the OpenAPI operationIds."""
