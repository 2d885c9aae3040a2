from google.api import annotations_pb2 as _annotations_pb2
from . import response_object_pb2 as _response_object_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Conversation(_message.Message):
    __slots__ = ("id", "object", "created_at", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created_at: int
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created_at: _Optional[int] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CreateConversationRequest(_message.Message):
    __slots__ = ("items", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, items: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CreateConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class GetConversationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class GetConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class UpdateConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, conversation_id: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class UpdateConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class DeleteConversationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class DeleteConversationResponse(_message.Message):
    __slots__ = ("id", "object", "deleted")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    deleted: bool
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., deleted: _Optional[bool] = ...) -> None: ...

class ListConversationItemsRequest(_message.Message):
    __slots__ = ("conversation_id", "after", "limit", "order", "include")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    after: str
    limit: int
    order: str
    include: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, conversation_id: _Optional[str] = ..., after: _Optional[str] = ..., limit: _Optional[int] = ..., order: _Optional[str] = ..., include: _Optional[_Iterable[str]] = ...) -> None: ...

class ListConversationItemsResponse(_message.Message):
    __slots__ = ("object", "data", "first_id", "last_id", "has_more")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    first_id: str
    last_id: str
    has_more: bool
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., first_id: _Optional[str] = ..., last_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

class CreateConversationItemsRequest(_message.Message):
    __slots__ = ("conversation_id", "items", "include")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    items: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    include: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, conversation_id: _Optional[str] = ..., items: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., include: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateConversationItemsResponse(_message.Message):
    __slots__ = ("object", "data", "first_id", "last_id", "has_more")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    first_id: str
    last_id: str
    has_more: bool
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., first_id: _Optional[str] = ..., last_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

class GetConversationItemRequest(_message.Message):
    __slots__ = ("conversation_id", "item_id", "include")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    item_id: str
    include: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, conversation_id: _Optional[str] = ..., item_id: _Optional[str] = ..., include: _Optional[_Iterable[str]] = ...) -> None: ...

class GetConversationItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: _response_object_pb2.InputItem
    def __init__(self, item: _Optional[_Union[_response_object_pb2.InputItem, _Mapping]] = ...) -> None: ...

class DeleteConversationItemRequest(_message.Message):
    __slots__ = ("conversation_id", "item_id")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    item_id: str
    def __init__(self, conversation_id: _Optional[str] = ..., item_id: _Optional[str] = ...) -> None: ...

class DeleteConversationItemResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...
