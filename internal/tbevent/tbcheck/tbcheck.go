package tbcheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// pyReader is an independent reader of the TFRecord event format: its own
// table-driven CRC-32C (checked against the standard check value), both
// masked CRCs checked per record, and the Event protobuf decoded with
// google.protobuf from descriptors declared here (event.proto, summary.proto
// field numbers) when installed, and always with a hand-written field parser
// (the two must agree). It prints the events as JSON.
const pyReader = `
import json, struct, sys

def make_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t
TABLE = make_table()

def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF

assert crc32c(b"123456789") == 0xE3069283

def masked(b):
    c = crc32c(b)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF

def records(data):
    off = 0
    while off < len(data):
        header = data[off:off+8]
        (n,) = struct.unpack("<Q", header)
        (hc,) = struct.unpack("<I", data[off+8:off+12])
        if hc != masked(header):
            sys.exit("length crc mismatch at %d" % off)
        body = data[off+12:off+12+n]
        (dc,) = struct.unpack("<I", data[off+12+n:off+16+n])
        if dc != masked(body):
            sys.exit("data crc mismatch at %d" % off)
        yield body
        off += 16 + n
    if off != len(data):
        sys.exit("trailing bytes")

def varint(b, i):
    x = s = 0
    while True:
        c = b[i]; i += 1
        x |= (c & 0x7F) << s; s += 7
        if c < 0x80:
            return x, i

def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = b[i:i+8]; i += 8
        elif wt == 2:
            n, i = varint(b, i); v = b[i:i+n]; i += n
        elif wt == 5:
            v = b[i:i+4]; i += 4
        else:
            sys.exit("wire type %d" % wt)
        yield num, wt, v

def by_hand(body):
    ev = {"wall_time": 0.0, "step": 0, "file_version": "", "values": []}
    for num, wt, v in fields(body):
        if num == 1 and wt == 1: ev["wall_time"] = struct.unpack("<d", v)[0]
        elif num == 2 and wt == 0: ev["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif num == 3 and wt == 2: ev["file_version"] = v.decode()
        elif num == 5 and wt == 2:
            for n2, w2, val in fields(v):
                if n2 == 1 and w2 == 2:
                    tag, x = "", 0.0
                    for n3, w3, y in fields(val):
                        if n3 == 1 and w3 == 2: tag = y.decode()
                        elif n3 == 2 and w3 == 5: x = struct.unpack("<f", y)[0]
                    ev["values"].append([tag, x])
    return ev

def with_protobuf():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fd = descriptor_pb2.FileDescriptorProto(name="check_event.proto", package="check", syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    def msg(name, fs):
        m = fd.message_type.add(name=name)
        for fname, num, typ, label, tname in fs:
            f = m.field.add(name=fname, number=num, type=typ, label=label)
            if tname: f.type_name = tname
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    msg("Value", [("tag", 1, F.TYPE_STRING, opt, None), ("simple_value", 2, F.TYPE_FLOAT, opt, None)])
    msg("Summary", [("value", 1, F.TYPE_MESSAGE, rep, ".check.Value")])
    msg("Event", [("wall_time", 1, F.TYPE_DOUBLE, opt, None), ("step", 2, F.TYPE_INT64, opt, None),
                  ("file_version", 3, F.TYPE_STRING, opt, None), ("summary", 5, F.TYPE_MESSAGE, opt, ".check.Summary")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    d = pool.FindMessageTypeByName("check.Event")
    if hasattr(message_factory, "GetMessageClass"):
        cls = message_factory.GetMessageClass(d)
    else:
        cls = message_factory.MessageFactory(pool).GetPrototype(d)
    def dec(body):
        e = cls()
        e.ParseFromString(body)
        return {"wall_time": e.wall_time, "step": e.step, "file_version": e.file_version,
                "values": [[v.tag, v.simple_value] for v in e.summary.value]}
    return dec

try:
    decode, how = with_protobuf(), "google.protobuf"
except ImportError:
    decode, how = by_hand, "hand"
out = []
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        evs = []
        for b in records(f.read()):
            ev = decode(b)
            if ev != by_hand(b):
                sys.exit("the decoders disagree: %r vs %r" % (ev, by_hand(b)))
            evs.append(ev)
        out.append(evs)
print(json.dumps({"decoder": how, "files": out}))
`

// Event is an event as the Python reader decoded it; Values holds
// [tag, value] pairs.
type Event struct {
	WallTime    float64 `json:"wall_time"`
	Step        int64   `json:"step"`
	FileVersion string  `json:"file_version"`
	Values      [][2]any
}

// Read reads event files with the Python reader and returns each file's
// events; t is skipped without /usr/bin/python3 and fails on any framing,
// CRC or decoding error.
func Read(t testing.TB, paths ...string) [][]Event {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3 for the independent reader")
	}
	script := filepath.Join(t.TempDir(), "read_events.py")
	if err := os.WriteFile(script, []byte(pyReader), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, append([]string{script}, paths...)...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("python reader: %v: %s", err, msg)
	}
	var res struct {
		Decoder string
		Files   [][]Event
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("python reader output %q: %v", out, err)
	}
	t.Logf("python reader decoded with %s", res.Decoder)
	return res.Files
}

// Value is the value tagged tag in e, and whether e holds one.
func (e Event) Value(tag string) (float64, bool) {
	for _, v := range e.Values {
		if s, _ := v[0].(string); s == tag {
			x, ok := v[1].(float64)
			return x, ok
		}
	}
	return 0, false
}
