// (run, step, args) cases whose keys must equal the Python SDK's, byte for byte.
export const CASES = [
  ["inv-42", "charge", { amount: 42 }],
  ["inv-42", "charge", {}],
  ["inv-42", "charge", null],
  ["r", "s", { b: 1, a: 2, c: { z: [3, 2, 1], y: null, x: true } }],
  ["r", "s", { "\u00e9": "caf\u00e9", "\u4e2d": "\u6587", "😀": "emoji", "\uffff": "last BMP" }],
  ["run é", "step ✓", { quote: '"', backslash: "\\", nl: "a\nb", tab: "\t", ctrl: "\u0001\u001f\u007f", ls: "\u2028" }],
  ["r", "floats", { a: 0.1, b: 1.5, c: -2.25, d: 1e-5, e: 1e-7, f: 1.5e300, g: 1e21, h: 123456789012345.6, i: 5e-324 }],
  ["r", "ints", { a: 0, b: -1, c: 2 ** 53, d: 1e20, e: 1.0, f: -0, g: 9007199254740993n }],
  ["r", "nested", [{ b: [{ d: 1, c: 2 }] }, [[[]]], "x"]],
  ["r", "dropped", { keep: 1, gone: undefined, fn: () => 1, list: [undefined, 2] }],
  ["r", "date", { at: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)) }],
  ["r", "order", { B: 1, a: 2, _: 3, "10": 4, "9": 5, "": 6 }],
];
