"""What connexion wraps around a handler (its parameters parsed and passed, its return made a
response), built once per operation instead of once per request.

connexion's AsyncApp builds that pipeline anew for every request: a StarletteDecorator, three
wrapper functions each with functools.wraps, the handler's signature inspected, a URI parser made
from the operation's parameters; then, for every request, it regroups the operation's parameters
by where they go, works out their defaults, reads the content type to name a body the operation
does not take, and looks up the operation's media types, through context variables each time.
None of that depends on the request: with the same waste in request validation (api.validation),
it was more than a quarter of the instructions of GET /permissions on PostgreSQL.
Here each operation works it out once, when the API is added. What still runs per request is
connexion's own casting of each value (``_get_val_from_param``), the defaults merged as connexion
merges them, and its serialization, so a handler gets the same arguments and the client the same
answer. An operation with a request body keeps connexion's parameter decorator as it is: it is the
one that reads bodies, forms and files.
"""
from __future__ import annotations

import functools
from copy import deepcopy

from connexion.apps.asynchronous import AsyncApi, AsyncOperation
from connexion.context import context, receive, scope
from connexion.decorators import StarletteDecorator
from connexion.decorators.parameter import (
    CONTEXT_NAME,
    AsyncParameterDecorator,
    _get_query_defaults,
    _get_val_from_param,
    unwrap_decorators,
)
from connexion.decorators.response import AsyncResponseDecorator
from connexion.exceptions import NonConformingResponseHeaders
from connexion.utils import deep_merge, extract_content_type, inspect_function_arguments

from .validation import uri_parser_of


class _Arguments(AsyncParameterDecorator):
    """connexion's AsyncParameterDecorator for one operation. For an operation without a request
    body, the handler's keyword arguments as connexion's ``prep_kwargs`` makes them (path values,
    then query values over the defaults, each cast by its definition and kept if the handler takes
    it, then the request context's entries the handler names), from tables made once."""

    def __init__(self, operation, **kwargs) -> None:
        super().__init__(**kwargs)
        self._operation = operation

    def __call__(self, function):
        operation = self._operation
        if operation.is_request_body_defined or operation.method.upper() == "TRACE":
            return super().__call__(function)
        arguments, has_kwargs = inspect_function_arguments(unwrap_decorators(function))
        sanitize = self.sanitize_fn
        path = {p["name"]: p for p in operation.parameters if p["in"] == "path"}
        query = {p["name"]: p for p in operation.parameters if p["in"] == "query"}
        defaults = _get_query_defaults(query)
        # Only a default that is a container can be changed by the merge or by a handler.
        fresh_defaults = (deepcopy if any(isinstance(v, (dict, list)) for v in defaults.values()) else dict)
        # connexion sanitizes a name twice: once as it reads it, once over the keyword arguments.
        names = {name: sanitize(sanitize(name)) for name in (*path, *query)}
        taken = {name for name in query if has_kwargs or sanitize(name) in arguments}
        wants_context = CONTEXT_NAME in arguments

        @functools.wraps(function)
        async def wrapper(request):
            kwargs = {}
            for name, value in request.path_params.items():
                definition = path.get(name)
                if definition is None:  # a path value the contract does not declare, passed as it came
                    kwargs[sanitize(sanitize(name))] = value
                else:
                    kwargs[names[name]] = _get_val_from_param(value, definition)
            for name, value in deep_merge(fresh_defaults(defaults), request.query_params).items():
                if name in taken:
                    kwargs[names[name]] = _get_val_from_param(value, query[name])
            request_context = context._get_current_object()
            for key, value in request_context.items():
                if has_kwargs or key in arguments:
                    kwargs[key] = value
            if wants_context:
                kwargs[CONTEXT_NAME] = request_context
            return await function(**kwargs)

        return wrapper


class _Answer(AsyncResponseDecorator):
    """connexion's AsyncResponseDecorator with the operation's media types read once (connexion
    reads them through a context variable and rebuilds the list on every answer)."""

    def __init__(self, operation, **kwargs) -> None:
        super().__init__(**kwargs)
        self._operation = operation
        self._produces = list(set(operation.produces))

    def _infer_content_type(self, data, headers):
        # connexion's inference, minus the header scan when the handler set no header.
        content_type = extract_content_type(headers) if headers else None
        produces = self._produces
        if data is not None and not produces:
            produces = ["application/json"]
        if content_type:
            if content_type not in produces:
                raise NonConformingResponseHeaders(
                    f"Returned content type ({content_type}) is not defined in operation spec "
                    f"({self._operation.produces}).")
            return content_type
        if len(produces) == 1:
            return produces[0]
        if not produces:
            return None
        return super()._infer_content_type(data, headers)


class _DecoratedOnce(StarletteDecorator):
    """connexion's StarletteDecorator with the decoration and the URI parser made at startup. The
    parser is made from the operation connexion routes to this handler, the same spec the
    per-request parser read through the context."""

    def __init__(self, operation, **kwargs) -> None:
        super().__init__(**kwargs)
        self._operation = operation
        self._uri_parser = uri_parser_of(operation)

    @property
    def _parameter_decorator_cls(self):
        return functools.partial(_Arguments, self._operation)

    @property
    def _response_decorator_cls(self):
        return functools.partial(_Answer, self._operation)

    def __call__(self, function):
        decorated = self.decorate(function)
        get_request, uri_parser = self.framework.get_request, self._uri_parser

        @functools.wraps(function)
        async def wrapper(*args, **kwargs):
            return await decorated(get_request(uri_parser=uri_parser, scope=scope, receive=receive))

        return wrapper


class _OperationDecoratedOnce(AsyncOperation):
    def __init__(self, fn, *, operation, jsonifier, pythonic_params: bool) -> None:
        super().__init__(fn, jsonifier=jsonifier, operation_id=operation.operation_id,
                         pythonic_params=pythonic_params)
        self._decorated = _DecoratedOnce(operation, pythonic_params=pythonic_params, jsonifier=jsonifier)(fn)

    @property
    def fn(self):
        return self._decorated


class ApiDecoratedOnce(AsyncApi):
    """connexion's AsyncApi whose operations keep their pipeline (set as the app's ``api_cls``)."""

    def make_operation(self, operation) -> AsyncOperation:
        return _OperationDecoratedOnce(operation.function, operation=operation, jsonifier=self.jsonifier,
                                       pythonic_params=self.pythonic_params)
