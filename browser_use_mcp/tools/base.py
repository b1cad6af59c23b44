"""What a tool is: one async function, whose signature and docstring say the rest.

    @tool('List tabs', read_only=True, open_world=False)
    async def browser_list_tabs(state: SessionState, args: NoArgs, call: Call) -> Reply[TabList]:
        '''List the open tabs of the session's browser, ...'''

- its **name** is the function's name, its **description** the docstring (white space folded);
- its **scope** is the type of the first parameter: ``SessionState``, a session tool (the catalogue
  adds ``session_id`` to its schema, resolves it, takes the session's lock and prepares the
  session before calling it); ``SessionRegistry``, an admin tool that manages sessions;
- its **input model** is the type of the second parameter, an ``Args``;
- its **output model**, if it returns structured content, is the ``X`` of ``-> Reply[X]`` (an
  ``Output``); ``-> str`` and ``-> Reply`` declare none;
- the decorator's arguments are its MCP annotations: a title and how it treats its environment.

Tools are collected from the family modules (``browser_use_mcp.tools``): defining one is all it takes.

The JSON schema a client sees is generated from the pydantic input model and then shaped
like upstream's hand-written one (no titles, ``X | None`` shown as plain ``X``), so clients
written for upstream see the same names, types, defaults and required lists.

A tool that returns structured content declares an output model; its ``outputSchema`` is
generated from it (titles dropped, nested models inlined, ``X | None`` kept as "X or null":
unlike arguments, output values really are null). The handler builds one instance of that
model and derives both the text and the structured content from it, so they cannot drift.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from browser_use_mcp.errors import InvalidArgument
from browser_use_mcp.sessions import SessionRegistry, SessionState

RETENTION_PLACEHOLDER = '{retention}'


class Args(BaseModel):
	"""Base of every tool's input model: strict types, unknown keys ignored (as upstream)."""

	model_config = ConfigDict(strict=True, extra='ignore')


class NoArgs(Args):
	pass


class Output(BaseModel):
	"""Base of every tool's output model (the structured content of its successful results)."""

	def dump(self) -> dict[str, Any]:
		"""The structured content: this instance as JSON types, fields in declaration order."""
		return self.model_dump(mode='json')


class _ReportsState:
	"""Marks the one argument that asks for the page state after the action (see ``Tool.wants_state``)."""


REPORTS_STATE = _ReportsState()

# The optional argument of the tools that change the page: the catalogue appends the page state
# after the action, and its indices become the session's current ones (``tools.common``). A tool
# declares it by typing an argument ``IncludeState``; its name is not what the catalogue looks at.
IncludeState = Annotated[
	bool,
	Field(
		description='Also return the page state after this action, exactly as browser_get_state would, as a second '
		'text block; its element indices are then the current ones. Saves a browser_get_state call.'
	),
	REPORTS_STATE,
]


# A JSON number that stays an int when it is one (pydantic's ``float`` would turn 600 into 600.0
# and change the text a client already parses); advertised as plain "number".
Number = Annotated[int | float, WithJsonSchema({'type': 'number'})]

OutputT = TypeVar('OutputT', bound=Output)


@dataclass
class Image:
	data: str  # base64
	mime_type: str = 'image/png'


@dataclass
class Resource:
	"""A file's contents sent as an embedded resource (binary: ``blob`` is its base64)."""

	uri: str
	mime_type: str
	blob: str


@dataclass
class Reply(Generic[OutputT]):
	"""A tool's successful answer: text first (what upstream clients parse), then images.

	``Reply[X]`` as a handler's return type declares ``X`` as its structured content."""

	text: str
	images: list[Image] = field(default_factory=list)
	structured: dict[str, Any] | None = None
	notes: list[str] = field(default_factory=list)
	page_state: str | None = None  # the page after the action (include_state): the second text block
	body: str | None = None  # a file's text (browser_read_file): a text block of its own after the reply
	resources: list[Resource] = field(default_factory=list)  # embedded resources, after the images


def as_json(value: Any) -> str:
	return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@dataclass
class Call:
	"""What the transport knows about the call in flight, for tools that need it."""

	principal: str = 'local'
	progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None

	async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
		if self.progress is not None:
			await self.progress(progress, total, message)


Scope = Literal['session', 'admin']
SCOPES: dict[type, Scope] = {SessionState: 'session', SessionRegistry: 'admin'}
Handler = Callable[[Any, Any, Call], Awaitable['Reply[Any] | str']]


@dataclass(frozen=True)
class Hints:
	"""What a client may assume about a tool, advertised as its MCP annotations (hints, not
	guarantees). Its environment is the session's browser (for admin tools, the caller's
	sessions); the open world is whatever lies beyond the server: web sites and LLM providers.

	- ``read_only``: changes nothing (a read-only tool is also not destructive, and idempotent);
	- ``destructive``: may undo or overwrite what is there (close, click, type) rather than only add;
	- ``idempotent``: the same call again changes nothing more;
	- ``open_world``: may reach beyond the server (load or act on a site, call an LLM).
	"""

	title: str
	read_only: bool
	destructive: bool
	idempotent: bool
	open_world: bool


@dataclass(frozen=True)
class Tool:
	name: str
	description: str
	hints: Hints
	scope: Scope
	args: type[Args]
	handler: Handler
	output: type[Output] | None = None  # the structured content of a successful result, if any
	state_argument: str | None = None  # the argument typed IncludeState, if it has one
	# reads of the session's page worth starting beside the focus check that comes before the call
	# (a context manager given the session; ``common.read_ahead`` for browser_get_state)
	read_ahead: Callable[[Any], AbstractContextManager[None]] | None = None

	def wants_state(self, args: Args) -> bool:
		"""Whether this call asked for the page state after its action (its ``IncludeState`` argument)."""
		return self.state_argument is not None and bool(getattr(args, self.state_argument))

	def input_schema(self) -> dict[str, Any]:
		return model_schema(self.args)

	def output_schema(self) -> dict[str, Any] | None:
		return None if self.output is None else output_model_schema(self.output)

	def parse(self, arguments: dict[str, Any]) -> Args:
		try:
			return self.args.model_validate(arguments)
		except ValidationError as exc:
			raise InvalidArgument(describe_validation_error(self, exc)) from None


def tool(
	title: str,
	*,
	open_world: bool,
	read_only: bool = False,
	destructive: bool | None = None,
	idempotent: bool | None = None,
) -> Callable[[Handler], Tool]:
	"""Make the decorated handler a tool (see the module docstring). A tool that is not read-only
	must say whether it is destructive and idempotent: no hint is left to a default."""
	if read_only:
		if destructive or idempotent is False:
			raise TypeError(f'{title}: a read-only tool is neither destructive nor non-idempotent')
		destructive, idempotent = False, True
	elif destructive is None or idempotent is None:
		raise TypeError(f'{title}: a tool that changes things must say whether it is destructive and idempotent')
	hints = Hints(title, read_only, destructive, idempotent, open_world)
	# the namespace the handler is defined in: a handler defined inside a function may name
	# types imported there (pydantic resolves annotations the same way)
	caller = inspect.currentframe()
	namespace = dict(caller.f_back.f_locals) if caller is not None and caller.f_back is not None else {}
	del caller  # a frame kept alive keeps every local of the caller alive

	def register(fn: Handler) -> Tool:
		return _from_handler(fn, hints, namespace)

	return register


def _from_handler(fn: Handler, hints: Hints, namespace: dict[str, Any]) -> Tool:
	name = getattr(fn, '__name__', repr(fn))
	where = f'tool {name} ({getattr(fn, "__module__", "?")})'
	if not inspect.iscoroutinefunction(fn):
		raise TypeError(f'{where}: a handler is an async function')
	if not (fn.__doc__ or '').strip():
		raise TypeError(f'{where}: its docstring is the description clients read; write one')
	types = typing.get_type_hints(fn, globalns=getattr(fn, '__globals__', {}), localns=namespace)
	params = list(inspect.signature(fn).parameters)
	if len(params) != 3:
		raise TypeError(f'{where}: a handler takes (state: SessionState | registry: SessionRegistry, args: <Args>, call: Call)')
	first, second, third = (types.get(p) for p in params)
	scope = SCOPES.get(first) if isinstance(first, type) else None
	if scope is None:
		raise TypeError(f'{where}: annotate its first parameter SessionState (a session tool) or SessionRegistry (admin)')
	if not (isinstance(second, type) and issubclass(second, Args)):
		raise TypeError(f'{where}: annotate its second parameter with its input model, a subclass of Args')
	if third is not Call:
		raise TypeError(f'{where}: annotate its third parameter Call')
	returns = types.get('return')
	output = None
	if typing.get_origin(returns) is Reply:
		(output,) = typing.get_args(returns)
		if not (isinstance(output, type) and issubclass(output, Output)):
			raise TypeError(f'{where}: in -> Reply[X], X is its output model, a subclass of Output')
	elif returns not in (str, Reply):
		raise TypeError(f'{where}: return str, Reply, or Reply[X] for structured content X')
	state_argument = _state_argument(second, where)
	return Tool(name, ' '.join(fn.__doc__.split()), hints, scope, second, fn, output, state_argument)


def _state_argument(args: type[Args], where: str) -> str | None:
	"""The name of the argument typed ``IncludeState`` (at most one), or None."""
	found = [name for name, info in args.model_fields.items() if any(m is REPORTS_STATE for m in info.metadata)]
	if len(found) > 1:
		raise TypeError(f'{where}: at most one argument is typed IncludeState, not {", ".join(found)}')
	return found[0] if found else None


def _clean(node: Any) -> Any:
	if isinstance(node, dict):
		node = {k: _clean(v) for k, v in node.items() if k != 'title'}
		any_of = node.get('anyOf')
		if isinstance(any_of, list):
			non_null = [s for s in any_of if s != {'type': 'null'}]
			if len(non_null) == 1 and len(non_null) < len(any_of):
				merged = {**{k: v for k, v in node.items() if k != 'anyOf'}, **non_null[0]}
				if merged.get('default', ...) is None:
					merged.pop('default')
				return merged
		return node
	if isinstance(node, list):
		return [_clean(v) for v in node]
	return node


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
	raw = model.model_json_schema()
	properties = _inline(raw.get('properties', {}), raw.get('$defs', {}))  # nested option objects, spelled out
	schema: dict[str, Any] = {'type': 'object', 'properties': _clean(properties)}
	if raw.get('required'):
		schema['required'] = list(raw['required'])
	return schema


# Keywords whose value maps names to schemas (a property may well be called "title").
_SCHEMA_MAPS = ('properties', 'patternProperties', '$defs')
# Keywords whose value is data, not schema: left exactly as they are.
_DATA = ('default', 'const', 'enum', 'examples')


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
	"""Replace every ``{"$ref": "#/$defs/X"}`` with X itself (our output models are not recursive)."""
	if isinstance(node, list):
		return [_inline(v, defs, seen) for v in node]
	if not isinstance(node, dict):
		return node
	ref = node.get('$ref')
	if isinstance(ref, str) and ref.startswith('#/$defs/'):
		name = ref.removeprefix('#/$defs/')
		if name in seen:
			raise ValueError(f'output model refers to itself through {name}; output schemas are inlined')
		target = _inline(defs[name], defs, (*seen, name))
		return {**target, **{k: _inline(v, defs, seen) for k, v in node.items() if k != '$ref'}}
	out = {}
	for key, value in node.items():
		if key in _SCHEMA_MAPS and isinstance(value, dict):
			out[key] = {name: _inline(sub, defs, seen) for name, sub in value.items()}
		else:
			out[key] = value if key in _DATA else _inline(value, defs, seen)
	return out


def _drop_titles(node: Any) -> Any:
	if isinstance(node, list):
		return [_drop_titles(v) for v in node]
	if not isinstance(node, dict):
		return node
	out = {}
	for key, value in node.items():
		if key == 'title' or key == '$defs':
			continue
		if key in _SCHEMA_MAPS and isinstance(value, dict):
			out[key] = {name: _drop_titles(sub) for name, sub in value.items()}
		else:
			out[key] = value if key in _DATA else _drop_titles(value)
	return out


def output_model_schema(model: type[BaseModel]) -> dict[str, Any]:
	"""The ``outputSchema`` of a tool whose structured content is ``model``: a self-contained JSON
	Schema (2020-12) with ``"type": "object"`` at the root, as the MCP spec requires."""
	raw = model.model_json_schema(mode='serialization')
	schema = _drop_titles(_inline(raw, raw.get('$defs', {})))
	schema.pop('description', None)  # the model's docstring is for readers of the code
	if schema.get('type') != 'object':
		raise ValueError(f'{model.__name__}: an output schema must have "type": "object" at its root')
	return schema


def _type_name(prop: dict[str, Any]) -> str:
	if 'enum' in prop:
		return ' | '.join(json.dumps(v) for v in prop['enum'])
	kind = prop.get('type', 'any')
	if kind == 'array':
		return f'array of {_type_name(prop.get("items", {}))}'
	return str(kind)


def describe_validation_error(tool: Tool, exc: ValidationError) -> str:
	problems = []
	for err in exc.errors(include_url=False):
		where = '.'.join(str(p) for p in err['loc']) or 'arguments'
		problems.append(f'{where}: {err["msg"]}')
	schema = tool.input_schema()
	required = set(schema.get('required', []))
	expected = ', '.join(
		f'{name}: {_type_name(prop)}{" (required)" if name in required else ""}' for name, prop in schema['properties'].items()
	)
	return f'Invalid arguments for {tool.name}: ' + '; '.join(problems) + f'. Expected {{{expected}}}.'
