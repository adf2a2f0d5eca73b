// Generates golden.json: what JavaScript's JSON.stringify produces for a set of JSON
// documents, so that the Go tests can check byte compatibility without a JavaScript engine.
//
// Regenerate with:  node jsonv/testdata/gen_golden.mjs > jsonv/testdata/golden.json
//
// Every document's "in" text is itself produced by JSON.stringify, so its member order is
// the order a JavaScript object would enumerate; the Go side parses "in" and must reproduce
// each expected output byte for byte.

let seed = 0x5eed1234;
function rand() {
  // xorshift32: deterministic, so the file only changes when this script does.
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 0x100000000;
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

function randomDouble() {
  const view = new DataView(new ArrayBuffer(8));
  for (;;) {
    view.setUint32(0, Math.floor(rand() * 0x100000000));
    view.setUint32(4, Math.floor(rand() * 0x100000000));
    const x = view.getFloat64(0);
    if (Number.isFinite(x) && !Object.is(x, -0)) return x;
  }
}

function randomNumber() {
  switch (Math.floor(rand() * 5)) {
    case 0: return randomDouble();
    case 1: return Math.floor(rand() * 2000) - 1000;
    case 2: return (rand() - 0.5) * 10 ** (Math.floor(rand() * 60) - 30);
    case 3: return Math.round(rand() * 1e6) / 1000;
    default: return pick([0, 1e21, 1e-7, 1e-6, 123456789012345680000, 2 ** 53, 5e-324, 1.7976931348623157e308]);
  }
}

const keyPool = ['a', 'b', 'B', '_', 'z', '0', '1', '9', '10', '01', '-1', '1.5', '4294967294',
  '4294967295', 'é', '\ue000', '\uffff', '😀', '\u{10000}', '', 'a b', '\u0000', '"q"', 'key\n'];
const stringPool = ['', 'plain', 'quote " and \\ backslash', 'tab\tnl\ncr\r', '\b\f', '\u0000\u0001\u001f',
  '\u007f', '\u2028\u2029', '</script>&<>', 'é😀中文', '\ud83d\ude00', "it's", '\\u0041'];

function randomString() {
  if (rand() < 0.5) return pick(stringPool);
  let s = '';
  const n = Math.floor(rand() * 8);
  for (let i = 0; i < n; i++) {
    const r = rand();
    if (r < 0.3) s += String.fromCharCode(Math.floor(rand() * 0x20));
    else if (r < 0.8) s += String.fromCharCode(0x20 + Math.floor(rand() * 0x5f));
    else s += String.fromCodePoint(pick([0xe9, 0x2028, 0x4e2d, 0xe000, 0xfffd, 0x1f600, 0x10ffff]));
  }
  return s;
}

function randomValue(depth) {
  const r = rand();
  if (depth <= 0 || r < 0.4) {
    switch (Math.floor(rand() * 5)) {
      case 0: return null;
      case 1: return rand() < 0.5;
      case 2: return randomString();
      default: return randomNumber();
    }
  }
  if (r < 0.7) {
    const n = Math.floor(rand() * 5);
    return Array.from({ length: n }, () => randomValue(depth - 1));
  }
  const o = {};
  const n = Math.floor(rand() * 6);
  for (let i = 0; i < n; i++) o[pick(keyPool)] = randomValue(depth - 1);
  return o;
}

// Deep key sort followed by JSON.stringify, as the repeat-call reminder canonicalizes.
function canonical(v) {
  const sortDeep = (x) => {
    if (Array.isArray(x)) return x.map(sortDeep);
    if (x !== null && typeof x === 'object') {
      const out = {};
      for (const k of Object.keys(x).sort()) out[k] = sortDeep(x[k]);
      return out;
    }
    return x;
  };
  return JSON.stringify(sortDeep(v));
}

const handWritten = [
  'null', 'true', 'false', '0', '"x"', '[]', '{}', '[[]]', '{"a":{}}', '[{}, []]',
  '{"b":1,"a":2,"c":{"z":[1,2,{"y":null,"x":true}],"y":"s"}}',
  '{"10":1,"9":2,"b":3,"a":4,"01":5,"-1":6,"4294967295":7,"4294967294":8}',
  '{"\ue000":1,"\ud83d\ude00":2,"a":3,"B":4,"":5}',
  '"\\u2028\\u2029</script>\\u007f\\u0000\\u001f\\b\\f\\n\\r\\t\\"\\\\"',
  '[1e21, 1e20, 1e-7, 1e-6, 0.1, 100, 1e2, 5e-324, 1.7976931348623157e308, 123e-20, -1.25e-10, 0.30000000000000004, 9007199254740993, 1E+2, 1e-400]',
];

const numberTexts = ['0', '1', '-1', '0.1', '1e21', '1e20', '999999999999999999999', '1e-7', '1e-6',
  '0.000001', '0.0000001', '1.5e-7', '5e-324', '2e-324', '1.7976931348623157e308', '9007199254740993',
  '123456789012345680000', '1e300', '4.35', '0.1e1', '100', '1E2', '1e+2', '-0.5', '12345678.9',
  '1.0', '-1.0e-0', '123e-20', '3.14159265358979323846', '2.2250738585072014e-308',
  '2.2250738585072011e-308', '1e-400'];

const numbers = [];
for (const t of numberTexts) numbers.push({ in: t, out: JSON.stringify(JSON.parse(t)) });
for (let i = 0; i < 400; i++) {
  const x = randomNumber();
  // Both the shortest form and a longer, non-canonical spelling must parse to the same double.
  numbers.push({ in: x.toPrecision(17), out: JSON.stringify(x) });
  numbers.push({ in: JSON.stringify(x), out: JSON.stringify(x) });
}

const values = [];
const inputs = handWritten.map((t) => JSON.parse(t));
for (let i = 0; i < 300; i++) inputs.push(randomValue(4));
for (const v of inputs) {
  values.push({
    in: JSON.stringify(v),
    compact: JSON.stringify(v),
    indent2: JSON.stringify(v, null, 2),
    tab: JSON.stringify(v, null, '\t'),
    long: JSON.stringify(v, null, '-->😀<--123456'),
    canonical: canonical(v),
  });
}

process.stdout.write(JSON.stringify({ numbers, values }, null, 1) + '\n');
