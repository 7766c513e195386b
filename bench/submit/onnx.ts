// A one-node ONNX model written byte by byte: MatMul(A [m, k], B [k, n]) -> C [m, n], f32, opset 13.
// Just enough protobuf (varints and length-delimited fields) for ModelProto; field numbers are those
// of onnx/onnx.proto. Both operands are graph inputs (no initializer), so the peer gets B per call
// exactly as tenon's host matmul does and cannot pre-pack it.

/** Protobuf wire types used here. */
const VARINT = 0;
const LENGTH_DELIMITED = 2;
/** ONNX TensorProto.DataType.FLOAT. */
const ONNX_FLOAT = 1;
/** ONNX IR version 8 (ONNX 1.10+) with the default-domain opset 13. */
const IR_VERSION = 8;
const OPSET = 13;

const encoder = new TextEncoder();

function varint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

type Field = readonly number[];

function intField(field: number, value: number): Field {
  return [...varint((field << 3) | VARINT), ...varint(value)];
}

function bytesField(field: number, bytes: readonly number[] | Uint8Array): Field {
  return [...varint((field << 3) | LENGTH_DELIMITED), ...varint(bytes.length), ...bytes];
}

const stringField = (field: number, s: string): Field => bytesField(field, encoder.encode(s));
const message = (...fields: Field[]): number[] => fields.flat();

/** ValueInfoProto { name = 1, type = 2: TypeProto { tensor_type = 1 { elem_type = 1, shape = 2 } } }. */
function tensorInfo(name: string, shape: readonly number[]): number[] {
  const dims = shape.map((d) => bytesField(1, intField(1, d)));
  const tensorType = message(intField(1, ONNX_FLOAT), bytesField(2, message(...dims)));
  return message(stringField(1, name), bytesField(2, bytesField(1, tensorType)));
}

/** ModelProto bytes of C = MatMul(A, B). */
export function matmulModel(m: number, k: number, n: number): Uint8Array {
  // NodeProto { input = 1, output = 2, name = 3, op_type = 4 }
  const node = message(stringField(1, 'A'), stringField(1, 'B'), stringField(2, 'C'), stringField(3, 'mm'), stringField(4, 'MatMul'));
  // GraphProto { node = 1, name = 2, input = 11, output = 12 }
  const graph = message(
    bytesField(1, node),
    stringField(2, 'matmul'),
    bytesField(11, tensorInfo('A', [m, k])),
    bytesField(11, tensorInfo('B', [k, n])),
    bytesField(12, tensorInfo('C', [m, n])),
  );
  // ModelProto { ir_version = 1, producer_name = 2, graph = 7, opset_import = 8: { domain = 1, version = 2 } }
  const model = message(
    intField(1, IR_VERSION),
    stringField(2, 'tenon-bench'),
    bytesField(7, graph),
    bytesField(8, message(stringField(1, ''), intField(2, OPSET))),
  );
  return Uint8Array.from(model);
}
