"""What a tool is: a name, a description, an input model and one async function.

The JSON schema a client sees is generated from the pydantic input model and then shaped
like upstream's hand-written one (no titles, ``X | None`` shown as plain ``X``), so clients
written for upstream see the same names, types, defaults and required lists.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from browser_use_mcp.errors import InvalidArgument

if TYPE_CHECKING:
	from browser_use_mcp.sessions import SessionRegistry, SessionState


RETENTION_PLACEHOLDER = '{retention}'


class Args(BaseModel):
	"""Base of every tool's input model: strict types, unknown keys ignored (as upstream)."""

	model_config = ConfigDict(strict=True, extra='ignore')


class NoArgs(Args):
	pass


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

	def input_schema(self) -> dict[str, Any]:
		return model_schema(self.args)

	def parse(self, arguments: dict[str, Any]) -> Args:
		try:
			return self.args.model_validate(arguments)
		except ValidationError as exc:
			raise InvalidArgument(describe_validation_error(self, exc)) from None


def session_tool(
	name: str, description: str, args: type[Args] = NoArgs, *, read_only: bool = False, creates_session: bool = True
):
	def register(fn: SessionHandler) -> Tool:
		return Tool(name, description, args, fn, 'session', read_only, creates_session)

	return register


def admin_tool(name: str, description: str, args: type[Args] = NoArgs, *, read_only: bool = False):
	def register(fn: AdminHandler) -> Tool:
		return Tool(name, description, args, fn, 'admin', read_only)

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
