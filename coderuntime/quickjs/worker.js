// The worker prelude: evaluated once per run in a fresh QuickJS VM before the program.
// It receives the Go host functions, captures every intrinsic it relies on (so a program
// that rewrites globals cannot break the bridge), and returns the boot function.
//
// Host functions (Go):
//   hostLog(text)                    one console entry
//   hostCall(binding, argsJSON)      → call id, or -1 when the arguments frame is too large;
//                                    binding is the binding's number in the start frame's
//                                    order of names, namespace by namespace
//   hostDone(kind, text)             kind: "undefined" | "value" | "invalid-output" | "exception" | "oom" | "exit"
//   hostTimer(id, ms)                arm timer id
//   hostClearTimer(id)               disarm timer id
(function (hostLog, hostCall, hostDone, hostTimer, hostClearTimer) {
  'use strict';

  const ObjectCreate = Object.create;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ObjectIs = Object.is;
  const ObjectPrototype = Object.prototype;
  const ObjectHasOwn = Object.hasOwn;
  const ArrayPrototype = Array.prototype;
  const ArrayIsArray = Array.isArray;
  const ArrayJoin = Array.prototype.join;
  const ReflectApply = Reflect.apply;
  const ReflectOwnKeys = Reflect.ownKeys;
  const PropertyIsEnumerable = Object.prototype.propertyIsEnumerable;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const StringCtor = String;
  const StringSlice = String.prototype.slice;
  const StringSplit = String.prototype.split;
  const StringIndexOf = String.prototype.indexOf;
  const StringRepeat = String.prototype.repeat;
  const StringCharCodeAt = String.prototype.charCodeAt;
  const ErrorCtor = Error;
  const ErrorPrototype = Error.prototype;
  const ErrorToString = Error.prototype.toString;
  const FunctionToString = Function.prototype.toString;
  const FunctionCall = Function.prototype.call;
  const FunctionBind = Function.prototype.bind;
  const PromiseCtor = Promise;
  const PromiseThen = Promise.prototype.then;
  const PromiseResolve = Promise.resolve.bind(Promise);
  const PromiseReject = Promise.reject.bind(Promise);
  const MapCtor = Map;
  const MapGet = Map.prototype.get;
  const MapSet = Map.prototype.set;
  const MapHas = Map.prototype.has;
  const MapDelete = Map.prototype.delete;
  const MapPrototype = Map.prototype;
  const MapEntries = Map.prototype.entries;
  const MapSize = ObjectGetOwnPropertyDescriptor(Map.prototype, 'size').get;
  const SetCtor = Set;
  const SetAdd = Set.prototype.add;
  const SetHas = Set.prototype.has;
  const SetDelete = Set.prototype.delete;
  const SetPrototype = Set.prototype;
  const SetValues = Set.prototype.values;
  const SetSize = ObjectGetOwnPropertyDescriptor(Set.prototype, 'size').get;
  const IteratorNext = ObjectGetPrototypeOf(new Map().entries()).next;
  const SetIteratorNext = ObjectGetPrototypeOf(new Set().values()).next;
  const DatePrototype = Date.prototype;
  const DateToISOString = Date.prototype.toISOString;
  const RegExpPrototype = RegExp.prototype;
  const RegExpToString = RegExp.prototype.toString;
  const PromisePrototype = Promise.prototype;
  const SymbolToString = Symbol.prototype.toString;
  const AsyncFunction = ObjectGetPrototypeOf(async function () {}).constructor;
  const InternalErrorPrototype = typeof InternalError === 'function' ? InternalError.prototype : null;

  const call = (fn, self, ...args) => ReflectApply(fn, self, args);
  // uncurry makes fn(self, ...args) of a method, bound now to the intrinsic
  // Function.prototype.call: cheaper than call on the hot paths (no rest array).
  const uncurry = (fn) => ReflectApply(FunctionBind, FunctionCall, [fn]);
  const isEnumerable = uncurry(PropertyIsEnumerable);
  const setHas = uncurry(SetHas);
  const setAdd = uncurry(SetAdd);
  const setDelete = uncurry(SetDelete);

  // A descriptor with a null prototype, so a program that defines accessors on
  // Object.prototype cannot inject "get"/"set" fields into it.
  function define(target, key, value, enumerable) {
    const d = ObjectCreate(null);
    d.value = value;
    d.writable = true;
    d.enumerable = enumerable;
    d.configurable = true;
    ObjectDefineProperty(target, key, d);
  }
  function push(list, value) {
    define(list, list.length, value, true);
  }
  function newList() {
    return [];
  }
  function join(list, sep) {
    return call(ArrayJoin, list, sep);
  }

  // encode returns the JSON text of a lossless JSON value, or undefined when the value
  // is not lossless: non-finite numbers and -0, undefined, functions, symbols, bigints,
  // sparse or decorated arrays, objects that are not plain or null-prototype, symbol or
  // non-enumerable own keys, and cycles (shared references are fine). Each property is
  // read exactly once; a throwing getter throws out of encode. The walk is iterative and
  // makes no closure: the text is built by concatenation (QuickJS joins strings lazily)
  // and the open containers are a chain of array literals, whose elements are defined, so
  // that no accessor a program puts on Array.prototype is reached.
  function encode(root) {
    // A primitive needs none of the walk's bookkeeping.
    switch (typeof root) {
      case 'string': return JSONStringify(root);
      case 'boolean': return root ? 'true' : 'false';
      case 'number': return root - root === 0 && (root !== 0 || 1 / root > 0) ? '' + root : undefined;
      case 'object': if (root === null) return 'null'; break;
      default: return undefined;
    }
    let out = '';
    // top is the innermost open container's frame, [kind, source, keys, next index, outer
    // frame], kind 0 for an array and 1 for an object. A cycle returns to an open
    // container: while the walk is shallow the chain is scanned for it, and once it is 8
    // containers deep the open containers are also kept in the Set active.
    let top = null;
    let depth = 0;
    let active = null;
    let v = root;
    for (;;) {
      // Append v, or open it.
      switch (typeof v) {
        case 'string': out += JSONStringify(v); break;
        case 'boolean': out += v ? 'true' : 'false'; break;
        case 'number':
          // Finite (v - v is NaN otherwise) and not -0; a finite number's JSON text is
          // its string.
          if (v - v !== 0 || (v === 0 && 1 / v < 0)) return undefined;
          out += '' + v;
          break;
        case 'object': {
          if (v === null) { out += 'null'; break; }
          if (active !== null) {
            if (setHas(active, v)) return undefined;
          } else {
            for (let f = top; f !== null; f = f[4]) if (f[1] === v) return undefined;
          }
          const keys = ReflectOwnKeys(v);
          let kind;
          if (ArrayIsArray(v)) {
            if (ObjectGetPrototypeOf(v) !== ArrayPrototype) return undefined;
            const n = v.length;
            if (keys.length !== n + 1) return undefined;
            for (let i = 0; i < n; i++) if (!ObjectHasOwn(v, i)) return undefined;
            out += '[';
            kind = 0;
          } else {
            const proto = ObjectGetPrototypeOf(v);
            if (proto !== ObjectPrototype && proto !== null) return undefined;
            for (let i = 0; i < keys.length; i++) {
              const k = keys[i];
              if (typeof k !== 'string' || !isEnumerable(v, k)) return undefined;
            }
            out += '{';
            kind = 1;
          }
          if (active === null && depth >= 8) {
            active = new SetCtor();
            for (let f = top; f !== null; f = f[4]) setAdd(active, f[1]);
          }
          if (active !== null) setAdd(active, v);
          top = [kind, v, keys, 0, top];
          depth++;
          break;
        }
        default: return undefined;
      }
      // Move to the next value, closing the containers that are done.
      for (;;) {
        if (top === null) return out;
        const source = top[1];
        const i = top[3];
        if (i === (top[0] === 0 ? source.length : top[2].length)) {
          if (active !== null) setDelete(active, source);
          out += top[0] === 0 ? ']' : '}';
          top = top[4];
          depth--;
          continue;
        }
        top[3] = i + 1;
        if (i > 0) out += ',';
        if (top[0] === 0) {
          v = source[i];
        } else {
          const k = top[2][i];
          out += JSONStringify(k) + ':';
          v = source[k];
        }
        break;
      }
    }
  }

  function isError(v) {
    for (let p = v; p !== null && (typeof p === 'object' || typeof p === 'function'); p = ObjectGetPrototypeOf(p)) {
      if (p === ErrorPrototype) return true;
    }
    return false;
  }

  // positions maps lines of the type-stripped body back to the program: for body line k,
  // positions[k-1] is a flat list of [generated column (0-based), line, column] triples.
  let positions = [];
  // LINE_OFFSET is how many lines the AsyncFunction source puts before the body's first
  // line: "(async function anonymous(<params>", ") {" and the 'use strict' line.
  const LINE_OFFSET = 3;
  function digitsAt(text, i) {
    let n = 0, j = i;
    for (; j < text.length; j++) {
      const c = call(StringCharCodeAt, text, j);
      if (c < 48 || c > 57) break;
      n = n * 10 + (c - 48);
    }
    return j > i ? [n, j] : null;
  }
  // mapFrame rewrites "<input>:L:C" in one stack frame to the program position.
  function mapFrame(line) {
    const at = call(StringIndexOf, line, '<input>:');
    if (at < 0) return line;
    const l = digitsAt(line, at + 8);
    const c = l && call(StringCharCodeAt, line, l[1]) === 58 ? digitsAt(line, l[1] + 1) : null;
    if (!c) return join(call(StringSplit, line, '<input>'), 'program.ts');
    const tail = call(StringSlice, line, c[1]);
    const head = call(StringSlice, line, 0, at);
    const segs = positions[l[0] - LINE_OFFSET - 1];
    if (segs === undefined || segs.length === 0) return head + 'program.ts' + tail;
    let best = 0;
    for (let i = 0; i < segs.length; i += 3) {
      if (segs[i] <= c[0] - 1) best = i;
      else break;
    }
    return head + 'program.ts:' + segs[best + 1] + ':' + segs[best + 2] + tail;
  }

  // stackOf renders an error like Node's err.stack: "Name: message" followed by at most
  // STACK_FRAMES frames of the program (frames of this prelude are dropped).
  const STACK_FRAMES = 10;
  function stackOf(e) {
    let head;
    try { head = call(ErrorToString, e); } catch { head = 'Error'; }
    let stack;
    try { stack = e.stack; } catch { stack = undefined; }
    if (typeof stack !== 'string' || stack === '') return head;
    const lines = call(StringSplit, stack, '\n');
    const kept = newList();
    for (let i = 0; i < lines.length && kept.length < STACK_FRAMES; i++) {
      const line = lines[i];
      // Frames of the prelude (evaluated as <eval>, and the apply that starts the program)
      // are not the program's.
      if (line === '' || call(StringIndexOf, line, '<eval>') >= 0 || line === '    at apply (native)') continue;
      push(kept, mapFrame(line));
    }
    if (kept.length === 0) return head;
    if (call(StringIndexOf, stack, head) === 0) return stack;
    return head + '\n' + join(kept, '\n');
  }

  // isOutOfMemory recognizes what QuickJS throws when the heap limit is reached: an
  // InternalError "out of memory", or null when even that error could not be allocated.
  function isOutOfMemory(e) {
    if (e === null) return true;
    if (typeof e !== 'object' || ObjectGetPrototypeOf(e) !== InternalErrorPrototype) return false;
    const d = ObjectGetOwnPropertyDescriptor(e, 'message');
    return d !== undefined && ObjectHasOwn(d, 'value') && d.value === 'out of memory';
  }
  function fail(e) {
    if (isOutOfMemory(e)) hostDone('oom', '');
    else hostDone('exception', renderThrown(e));
  }

  function renderThrown(e) {
    try {
      if (isError(e)) return stackOf(e);
      return StringCtor(e);
    } catch {
      return 'program threw an unrenderable value';
    }
  }

  // inspect renders a value for the console, after Node's util.inspect: depth 4, 100 array
  // items, 10 000 characters per string, getters shown as [Getter] without being called.
  const MAX_DEPTH = 4, MAX_ITEMS = 100, MAX_STRING = 10000, BREAK = 72;
  function quote(s) {
    let out = JSONStringify(s);
    out = call(StringSlice, out, 1, out.length - 1);
    out = join(call(StringSplit, out, '\\"'), '"');
    out = join(call(StringSplit, out, "'"), "\\'");
    return "'" + out + "'";
  }
  function isIdentifier(k) {
    if (k.length === 0) return false;
    for (let i = 0; i < k.length; i++) {
      const c = call(StringCharCodeAt, k, i);
      const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36;
      if (!letter && !(i > 0 && c >= 48 && c <= 57)) return false;
    }
    return true;
  }
  function keyText(k) {
    if (typeof k === 'symbol') return '[' + call(SymbolToString, k) + ']';
    if (isIdentifier(k)) return k;
    return quote(k);
  }
  function spaces(n) {
    return call(StringRepeat, ' ', n);
  }
  function functionText(f) {
    let src = '';
    try { src = call(FunctionToString, f); } catch {}
    let name = '';
    try { name = typeof f.name === 'string' ? f.name : ''; } catch {}
    if (call(StringIndexOf, src, 'class') === 0) return name ? '[class ' + name + ']' : '[class (anonymous)]';
    return name ? '[Function: ' + name + ']' : '[Function (anonymous)]';
  }
  function constructorName(v) {
    for (let p = ObjectGetPrototypeOf(v); p !== null; p = ObjectGetPrototypeOf(p)) {
      const d = ObjectGetOwnPropertyDescriptor(p, 'constructor');
      if (d && ObjectHasOwn(d, 'value') && typeof d.value === 'function') {
        const n = d.value.name;
        if (typeof n === 'string' && n !== '') return n;
      }
    }
    return null;
  }
  function wrap(prefix, open, entries, close, indent) {
    if (entries.length === 0) return prefix + open + close;
    let total = prefix.length;
    let multiline = false;
    for (let i = 0; i < entries.length; i++) {
      total += entries[i].length + 2;
      if (call(StringIndexOf, entries[i], '\n') >= 0) multiline = true;
    }
    if (!multiline && total + indent <= BREAK) return prefix + open + ' ' + join(entries, ', ') + ' ' + close;
    const pad = spaces(indent + 2);
    return prefix + open + '\n' + pad + join(entries, ',\n' + pad) + '\n' + spaces(indent) + close;
  }
  function inspect(v, depth, seen, indent) {
    switch (typeof v) {
      case 'string':
        if (depth === 0) return v;
        if (v.length > MAX_STRING) return quote(call(StringSlice, v, 0, MAX_STRING)) + '... ' + (v.length - MAX_STRING) + ' more characters';
        return quote(v);
      case 'number': return ObjectIs(v, -0) ? '-0' : StringCtor(v);
      case 'bigint': return StringCtor(v) + 'n';
      case 'boolean': return v ? 'true' : 'false';
      case 'undefined': return 'undefined';
      case 'symbol': return call(SymbolToString, v);
      case 'function': return functionText(v);
    }
    if (v === null) return 'null';
    if (call(SetHas, seen, v)) return '[Circular]';
    if (isError(v)) return stackOf(v);
    if (ObjectGetPrototypeOf(v) === DatePrototype) {
      try { return call(DateToISOString, v); } catch { return 'Invalid Date'; }
    }
    if (ObjectGetPrototypeOf(v) === RegExpPrototype) return call(RegExpToString, v);
    if (ObjectGetPrototypeOf(v) === PromisePrototype) return 'Promise {}';
    const isArray = ArrayIsArray(v);
    const name = constructorName(v);
    if (depth > MAX_DEPTH) return isArray ? '[Array]' : '[' + (name || 'Object') + ']';
    call(SetAdd, seen, v);
    try {
      const entries = newList();
      let prefix = '';
      let open = '{', close = '}';
      if (isArray) {
        open = '['; close = ']';
        if (name !== 'Array') prefix = (name || '[Array: null prototype]') + '(' + v.length + ') ';
        let holes = 0;
        const n = v.length;
        const shown = n < MAX_ITEMS ? n : MAX_ITEMS;
        for (let i = 0; i < shown; i++) {
          if (!ObjectHasOwn(v, i)) { holes++; continue; }
          if (holes > 0) { push(entries, '<' + holes + ' empty item' + (holes > 1 ? 's' : '') + '>'); holes = 0; }
          push(entries, property(v, i, depth, seen, indent));
        }
        if (holes > 0) push(entries, '<' + holes + ' empty item' + (holes > 1 ? 's' : '') + '>');
        if (n > shown) push(entries, '... ' + (n - shown) + ' more item' + (n - shown > 1 ? 's' : ''));
      } else if (ObjectGetPrototypeOf(v) === MapPrototype) {
        prefix = 'Map(' + call(MapSize, v) + ') ';
        const it = call(MapEntries, v);
        for (let r = call(IteratorNext, it); !r.done; r = call(IteratorNext, it)) {
          push(entries, inspect(r.value[0], depth + 1, seen, indent + 2) + ' => ' + inspect(r.value[1], depth + 1, seen, indent + 2));
        }
      } else if (ObjectGetPrototypeOf(v) === SetPrototype) {
        prefix = 'Set(' + call(SetSize, v) + ') ';
        const it = call(SetValues, v);
        for (let r = call(SetIteratorNext, it); !r.done; r = call(SetIteratorNext, it)) {
          push(entries, inspect(r.value, depth + 1, seen, indent + 2));
        }
      } else if (name === null) {
        prefix = '[Object: null prototype] ';
      } else if (name !== 'Object') {
        prefix = name + ' ';
      }
      const keys = ReflectOwnKeys(v);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        if (isArray && (k === 'length' || (typeof k === 'string' && StringCtor(+k) === k && +k >= 0))) continue;
        if (!call(PropertyIsEnumerable, v, k)) continue;
        push(entries, keyText(k) + ': ' + property(v, k, depth, seen, indent));
      }
      return wrap(prefix, open, entries, close, indent);
    } finally {
      call(SetDelete, seen, v);
    }
  }
  function property(v, k, depth, seen, indent) {
    const d = ObjectGetOwnPropertyDescriptor(v, k);
    if (d === undefined) return 'undefined';
    if (!ObjectHasOwn(d, 'value')) {
      const get = d.get !== undefined, set = d.set !== undefined;
      return get && set ? '[Getter/Setter]' : get ? '[Getter]' : '[Setter]';
    }
    return inspect(d.value, depth + 1, seen, indent + 2);
  }
  function render(args) {
    if (args.length === 1 && typeof args[0] === 'string') return args[0];
    const parts = newList();
    for (let i = 0; i < args.length; i++) {
      const arg = args[i];
      let text;
      if (typeof arg === 'string') {
        text = arg;
      } else {
        try {
          text = inspect(arg, 0, typeof arg === 'object' && arg !== null ? new SetCtor() : null, 0);
        } catch (e) {
          text = '[uninspectable value]';
        }
      }
      push(parts, text);
    }
    return join(parts, ' ');
  }

  return function boot(code, namespacesJSON, positionsJSON) {
    const namespaces = JSONParse(namespacesJSON);
    positions = JSONParse(positionsJSON);
    function makeErrorClass(desc) {
      const C = class extends ErrorCtor {
        constructor(memberName, message) {
          super(message);
          define(this, 'name', desc.name, true);
          define(this, desc.memberNameProperty, memberName, true);
        }
      };
      ObjectDefineProperty(C, 'name', { __proto__: null, value: desc.name });
      return C;
    }
    function failure(errorClass, name, message) {
      return errorClass ? new errorClass(name, message) : new ErrorCtor(message);
    }
    // A binding call's promise: the Promise constructor runs the one executor every call
    // shares, which hands the resolving functions over in these two variables.
    let takenResolve, takenReject;
    function take(resolve, reject) {
      takenResolve = resolve;
      takenReject = reject;
    }
    // pending maps the id of each call in flight to [resolve, reject, errorClass, name].
    // It has no prototype, so an id written to it reaches no accessor of the program's.
    const pending = ObjectCreate(null);
    // bindingFunction makes the function of binding number index (the host's order of
    // the start frame's names, namespace by namespace).
    function bindingFunction(index, name, errorClass) {
      return function (args) {
        let text;
        try { text = encode(args); } catch { text = undefined; }
        if (text === undefined) return PromiseReject(failure(errorClass, name, 'binding arguments must be lossless JSON'));
        const promise = new PromiseCtor(take);
        const resolve = takenResolve, reject = takenReject;
        takenResolve = takenReject = undefined;
        const id = hostCall(index, text);
        if (id < 0) reject(failure(errorClass, name, 'binding arguments are too large to send'));
        else pending[id] = [resolve, reject, errorClass, name];
        return promise;
      };
    }

    const params = newList();
    const values = newList();
    const classes = newList();
    let bindings = 0;
    for (let i = 0; i < namespaces.length; i++) {
      const ns = namespaces[i];
      const errorClass = ns.errorClass ? makeErrorClass(ns.errorClass) : null;
      const object = ObjectCreate(null);
      for (let j = 0; j < ns.names.length; j++) {
        define(object, ns.names[j], bindingFunction(bindings++, ns.names[j], errorClass), true);
      }
      push(params, ns.global);
      push(values, object);
      if (errorClass) push(classes, [ns.errorClass.name, errorClass]);
    }
    for (let i = 0; i < classes.length; i++) {
      push(params, classes[i][0]);
      push(values, classes[i][1]);
    }
    const consoleObject = ObjectCreate(null);
    const levels = ['log', 'info', 'warn', 'error', 'debug'];
    for (let i = 0; i < levels.length; i++) {
      define(consoleObject, levels[i], function (...args) { hostLog(render(args)); }, true);
    }
    push(params, 'console');
    push(values, consoleObject);

    // The part of Node's process a program written for Node reaches for, and nothing
    // else: stdout/stderr writes are log entries, exactly as console output is (one entry
    // per write, the text as written, newlines kept, a non-string chunk converted with
    // String), env is empty, and exit ends the run as a worker that exited.
    function streamWrite(chunk, a, b) {
      hostLog(typeof chunk === 'string' ? chunk : StringCtor(chunk));
      // Node's write(chunk[, encoding][, callback]): the callback is whichever of the next
      // two arguments is a function; it runs after the write, with no error.
      const callback = typeof a === 'function' ? a : typeof b === 'function' ? b : undefined;
      if (callback !== undefined) call(PromiseThen, PromiseResolve(), () => { callback(null); });
      return true;
    }
    function exitCode(code) {
      if (code === undefined || code === null) return 0;
      let n = code;
      if (typeof code === 'string' && code !== '' && StringCtor(+code) === code) n = +code;
      else if (typeof code !== 'number') {
        throw new TypeError('The "code" argument must be of type number. Received ' + (typeof code === 'string' ? "type string ('" + code + "')" : 'type ' + typeof code));
      }
      if (!(n === (n | 0))) {
        throw new RangeError('The value of "code" is out of range. It must be an integer. Received ' + StringCtor(n));
      }
      return n;
    }
    const processObject = {
      env: {},
      stdout: { write: streamWrite },
      stderr: { write: streamWrite },
      exit(code) {
        hostDone('exit', StringCtor(exitCode(code)));
        // The run is over: nothing the program does from here on reaches the host.
        throw new ErrorCtor('process.exit(' + StringCtor(code) + ')');
      },
    };
    globalThis.process = processObject;

    // Timers: setTimeout, setInterval and their clear functions, plus queueMicrotask.
    const timers = new MapCtor();
    let nextTimer = 1;
    function arm(fn, ms, args, repeat) {
      if (typeof fn !== 'function') throw new TypeError('the callback must be a function');
      let delay = +ms;
      if (!(delay >= 1 && delay <= 2147483647)) delay = 1;
      delay = delay | 0;
      const id = nextTimer++;
      call(MapSet, timers, id, [fn, args, repeat ? delay : 0]);
      hostTimer(id, delay);
      return id;
    }
    function disarm(id) {
      if (call(MapDelete, timers, id)) hostClearTimer(id);
    }
    globalThis.setTimeout = (fn, ms, ...args) => arm(fn, ms, args, false);
    globalThis.setInterval = (fn, ms, ...args) => arm(fn, ms, args, true);
    globalThis.clearTimeout = disarm;
    globalThis.clearInterval = disarm;
    globalThis.queueMicrotask = (fn) => {
      if (typeof fn !== 'function') throw new TypeError('the callback must be a function');
      call(PromiseThen, PromiseResolve(), () => { fn(); });
    };

    let fn;
    try {
      fn = new AsyncFunction(...params, "'use strict';\n" + code);
    } catch (e) {
      hostDone('exception', renderThrown(e));
      return null;
    }
    let promise;
    try {
      promise = ReflectApply(fn, undefined, values);
    } catch (e) {
      hostDone('exception', renderThrown(e));
      return null;
    }
    call(PromiseThen, promise,
      (value) => {
        if (value === undefined) { hostDone('undefined', ''); return; }
        let text;
        try { text = encode(value); } catch { text = undefined; }
        if (text === undefined) hostDone('invalid-output', '');
        else hostDone('value', text);
      },
      (e) => { fail(e); });

    return {
      __proto__: null,
      // resolve answers binding call id with the JSON text of its value.
      resolve(id, text) {
        const entry = pending[id];
        if (entry === undefined) return;
        delete pending[id];
        let value;
        try { value = JSONParse(text); } catch { entry[1](failure(entry[2], entry[3], 'binding resolution must be lossless JSON')); return; }
        entry[0](value);
      },
      // reject answers binding call id with the failure's message.
      reject(id, message) {
        const entry = pending[id];
        if (entry === undefined) return;
        delete pending[id];
        entry[1](failure(entry[2], entry[3], message));
      },
      // fire runs timer id; an uncaught throw ends the program like a thrown exception.
      fire(id) {
        const t = call(MapGet, timers, id);
        if (t === undefined) return;
        if (t[2] > 0) hostTimer(id, t[2]);
        else call(MapDelete, timers, id);
        try {
          ReflectApply(t[0], undefined, t[1]);
        } catch (e) {
          fail(e);
        }
      },
    };
  };
})
