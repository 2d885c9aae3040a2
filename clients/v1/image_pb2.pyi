from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ImageParameters(_message.Message):
    __slots__ = ("prompt", "n", "size", "response_format", "quality", "background", "output_format", "output_compression", "partial_images", "num_inference_steps", "guidance_scale", "rng_seed", "strength", "negative_prompt", "user")
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    QUALITY_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FORMAT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_COMPRESSION_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_IMAGES_FIELD_NUMBER: _ClassVar[int]
    NUM_INFERENCE_STEPS_FIELD_NUMBER: _ClassVar[int]
    GUIDANCE_SCALE_FIELD_NUMBER: _ClassVar[int]
    RNG_SEED_FIELD_NUMBER: _ClassVar[int]
    STRENGTH_FIELD_NUMBER: _ClassVar[int]
    NEGATIVE_PROMPT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    prompt: str
    n: int
    size: str
    response_format: str
    quality: str
    background: str
    output_format: str
    output_compression: int
    partial_images: int
    num_inference_steps: int
    guidance_scale: float
    rng_seed: int
    strength: float
    negative_prompt: str
    user: str
    def __init__(self, prompt: _Optional[str] = ..., n: _Optional[int] = ..., size: _Optional[str] = ..., response_format: _Optional[str] = ..., quality: _Optional[str] = ..., background: _Optional[str] = ..., output_format: _Optional[str] = ..., output_compression: _Optional[int] = ..., partial_images: _Optional[int] = ..., num_inference_steps: _Optional[int] = ..., guidance_scale: _Optional[float] = ..., rng_seed: _Optional[int] = ..., strength: _Optional[float] = ..., negative_prompt: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class InputImage(_message.Message):
    __slots__ = ("data", "filename")
    DATA_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    filename: str
    def __init__(self, data: _Optional[bytes] = ..., filename: _Optional[str] = ...) -> None: ...

class GeneratedImage(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class ImageResult(_message.Message):
    __slots__ = ("created", "data", "output_format", "size", "quality", "background", "input_tokens")
    CREATED_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FORMAT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    QUALITY_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    created: int
    data: _containers.RepeatedCompositeFieldContainer[GeneratedImage]
    output_format: str
    size: str
    quality: str
    background: str
    input_tokens: int
    def __init__(self, created: _Optional[int] = ..., data: _Optional[_Iterable[_Union[GeneratedImage, _Mapping]]] = ..., output_format: _Optional[str] = ..., size: _Optional[str] = ..., quality: _Optional[str] = ..., background: _Optional[str] = ..., input_tokens: _Optional[int] = ...) -> None: ...

class PartialImage(_message.Message):
    __slots__ = ("image", "partial_image_index", "step", "size")
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_IMAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    image: GeneratedImage
    partial_image_index: int
    step: int
    size: str
    def __init__(self, image: _Optional[_Union[GeneratedImage, _Mapping]] = ..., partial_image_index: _Optional[int] = ..., step: _Optional[int] = ..., size: _Optional[str] = ...) -> None: ...

class CreateImageRequest(_message.Message):
    __slots__ = ("model", "parameters")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    model: str
    parameters: ImageParameters
    def __init__(self, model: _Optional[str] = ..., parameters: _Optional[_Union[ImageParameters, _Mapping]] = ...) -> None: ...

class CreateImageResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ImageResult
    def __init__(self, result: _Optional[_Union[ImageResult, _Mapping]] = ...) -> None: ...

class StreamImageRequest(_message.Message):
    __slots__ = ("model", "parameters")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    model: str
    parameters: ImageParameters
    def __init__(self, model: _Optional[str] = ..., parameters: _Optional[_Union[ImageParameters, _Mapping]] = ...) -> None: ...

class StreamImageResponse(_message.Message):
    __slots__ = ("partial", "done")
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    partial: PartialImage
    done: ImageResult
    def __init__(self, partial: _Optional[_Union[PartialImage, _Mapping]] = ..., done: _Optional[_Union[ImageResult, _Mapping]] = ...) -> None: ...

class CreateImageEditRequest(_message.Message):
    __slots__ = ("model", "parameters", "images", "mask")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    MASK_FIELD_NUMBER: _ClassVar[int]
    model: str
    parameters: ImageParameters
    images: _containers.RepeatedCompositeFieldContainer[InputImage]
    mask: InputImage
    def __init__(self, model: _Optional[str] = ..., parameters: _Optional[_Union[ImageParameters, _Mapping]] = ..., images: _Optional[_Iterable[_Union[InputImage, _Mapping]]] = ..., mask: _Optional[_Union[InputImage, _Mapping]] = ...) -> None: ...

class CreateImageEditResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ImageResult
    def __init__(self, result: _Optional[_Union[ImageResult, _Mapping]] = ...) -> None: ...

class StreamImageEditRequest(_message.Message):
    __slots__ = ("model", "parameters", "images", "mask")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    MASK_FIELD_NUMBER: _ClassVar[int]
    model: str
    parameters: ImageParameters
    images: _containers.RepeatedCompositeFieldContainer[InputImage]
    mask: InputImage
    def __init__(self, model: _Optional[str] = ..., parameters: _Optional[_Union[ImageParameters, _Mapping]] = ..., images: _Optional[_Iterable[_Union[InputImage, _Mapping]]] = ..., mask: _Optional[_Union[InputImage, _Mapping]] = ...) -> None: ...

class StreamImageEditResponse(_message.Message):
    __slots__ = ("partial", "done")
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    partial: PartialImage
    done: ImageResult
    def __init__(self, partial: _Optional[_Union[PartialImage, _Mapping]] = ..., done: _Optional[_Union[ImageResult, _Mapping]] = ...) -> None: ...
