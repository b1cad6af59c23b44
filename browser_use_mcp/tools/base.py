"""What a tool is: a name, a description, an input model, an optional output model and one
async function.

The JSON schema a client sees is generated from the pydantic input model and then shaped
like upstream's hand-written one (no titles, ``X | None`` shown as plain ``X``), so clients
written for upstream see the same names, types, defaults and required lists.

A tool that returns structured content declares an output model; its ``outputSchema`` is
generated from it (titles dropped, nested models inlined, ``X | None`` kept as "X or null":
unlike arguments, output values really are null). The handler builds one instance of that
model and derives both the text and the structured content from it, so they cannot drift.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, WithJsonSchema

from browser_use_mcp.errors import InvalidArgument

if TYPE_CHECKING:
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


# A JSON number that stays an int when it is one (pydantic's ``float`` would turn 600 into 600.0
# and change the text a client already parses); advertised as plain "number".
Number = Annotated[int | float, WithJsonSchema({'type': 'number'})]


@dataclass
class Image:
	data: str  # base64
	mime_type: str = 'image/png'


@dataclass
class Reply:
	"""A tool's successful answer: text first (what upstream clients parse), then images."""

	text: str
	images: list[Image] = field(default_factory=list)
	structured: dict[str, Any] | None = None
	notes: list[str] = field(default_factory=list)


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


SessionHandler = Callable[['SessionState', Any, Call], Awaitable['Reply | str']]
AdminHandler = Callable[['SessionRegistry', Any, Call], Awaitable['Reply | str']]


@dataclass(frozen=True)
class Tool:
	name: str
	description: str
	args: type[Args]
	handler: SessionHandler | AdminHandler
	scope: Literal['session', 'admin'] = 'session'
	read_only: bool = False
	creates_session: bool = True  # False: acts only on an existing session (browser_close)
	output: type[Output] | None = None  # the structured content of a successful result, if any

	def input_schema(self) -> dict[str, Any]:
		return model_schema(self.args)

	def output_schema(self) -> dict[str, Any] | None:
		return None if self.output is None else output_model_schema(self.output)

	def parse(self, arguments: dict[str, Any]) -> Args:
		try:
			return self.args.model_validate(arguments)
		except ValidationError as exc:
			raise InvalidArgument(describe_validation_error(self, exc)) from None


def session_tool(
	name: str,
	description: str,
	args: type[Args] = NoArgs,
	*,
	read_only: bool = False,
	creates_session: bool = True,
	output: type[Output] | None = None,
):
	def register(fn: SessionHandler) -> Tool:
		return Tool(name, description, args, fn, 'session', read_only, creates_session, output)

	return register


def admin_tool(
	name: str, description: str, args: type[Args] = NoArgs, *, read_only: bool = False, output: type[Output] | None = None
):
	def register(fn: AdminHandler) -> Tool:
		return Tool(name, description, args, fn, 'admin', read_only, output=output)

	return register


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
	schema: dict[str, Any] = {'type': 'object', 'properties': _clean(raw.get('properties', {}))}
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
