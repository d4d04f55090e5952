// ONNX's enums by name, from the onnx-proto bindings (generated from onnx.proto): tensor element
// types and attribute kinds, so no file writes their numbers by hand.
import onnxProto from 'onnx-proto';

/** TensorProto.DataType: FLOAT 1, UINT8 2, INT8 3, INT32 6, INT64 7, BOOL 9, FLOAT16 10, ... */
export const DataType = onnxProto.onnx.TensorProto.DataType;
export type DataType = onnxProto.onnx.TensorProto.DataType;

/** AttributeProto.AttributeType: FLOAT 1, INT 2, STRING 3, ..., INTS 7, ... */
export const AttributeType = onnxProto.onnx.AttributeProto.AttributeType;
export type AttributeType = onnxProto.onnx.AttributeProto.AttributeType;
