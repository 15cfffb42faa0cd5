// Writes the Go fixtures of tests/encoders with github.com/vmihailenco/msgpack/v5, default options,
// from the records in ../expected.json.
//
// Usage (from this folder): go run . ../data
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Map form: one map per record, keyed by the tag names; time.Time is the timestamp extension -1.
type Event struct {
	ID        int64     `json:"id" msgpack:"id"`
	ProcessID int64     `json:"process_id" msgpack:"process_id"`
	ThreadID  int64     `json:"thread_id" msgpack:"thread_id"`
	Timestamp time.Time `json:"timestamp" msgpack:"timestamp"`
	Line      int64     `json:"line" msgpack:"line"`
	Value     float64   `json:"value" msgpack:"value"`
	Filename  string    `json:"filename" msgpack:"filename"`
	Path      string    `json:"path" msgpack:"path"`
	Tags      []string  `json:"tags" msgpack:"tags"`
	Attrs     Attrs     `json:"attrs" msgpack:"attrs"`
	Inner     Inner     `json:"inner" msgpack:"inner"`
	Note      *string   `json:"note" msgpack:"note"`
}

type Inner struct {
	Name  string `json:"name" msgpack:"name"`
	Level int64  `json:"level" msgpack:"level"`
}

// Array form: the same fields, in the same order, as arrays.
type EventArray struct {
	_msgpack  struct{} `msgpack:",as_array"`
	ID        int64
	ProcessID int64
	ThreadID  int64
	Timestamp time.Time
	Line      int64
	Value     float64
	Filename  string
	Path      string
	Tags      []string
	Attrs     Attrs
	Inner     InnerArray
	Note      *string
}

type InnerArray struct {
	_msgpack struct{} `msgpack:",as_array"`
	Name     string
	Level    int64
}

// Attrs is written with its keys sorted, so that the file is the same on every run: Go randomizes
// map order, and the Encoder's SetSortMapKeys covers only map[string]string, bool and interface{}.
type Attrs map[string]int64

func (a Attrs) EncodeMsgpack(enc *msgpack.Encoder) error {
	keys := make([]string, 0, len(a))
	for key := range a {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	if err := enc.EncodeMapLen(len(keys)); err != nil {
		return err
	}
	for _, key := range keys {
		if err := enc.EncodeString(key); err != nil {
			return err
		}
		if err := enc.Encode(a[key]); err != nil {
			return err
		}
	}
	return nil
}

// No msgpack tags: the map keys are the Go field names.
type UntaggedItem struct {
	ID, ProcessID, ThreadID int64
	TimestampNs             int64
	Line                    int64
	Value                   float64
	Filename, Path          string
}

// Fluentd's EventTime: extension type 0, big-endian uint32 seconds then uint32 nanoseconds.
type EventTime struct{ Seconds, Nanoseconds uint32 }

func (t EventTime) MarshalMsgpack() ([]byte, error) {
	b := make([]byte, 8)
	binary.BigEndian.PutUint32(b, t.Seconds)
	binary.BigEndian.PutUint32(b[4:], t.Nanoseconds)
	return b, nil
}

func (t *EventTime) UnmarshalMsgpack(b []byte) error {
	if len(b) != 8 {
		return fmt.Errorf("EventTime of %d bytes", len(b))
	}
	t.Seconds, t.Nanoseconds = binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	return nil
}

func init() {
	msgpack.RegisterExt(0, (*EventTime)(nil))
}

type FluentdRecord struct {
	Message string `json:"message" msgpack:"message"`
	Level   string `json:"level" msgpack:"level"`
	Count   int64  `json:"count" msgpack:"count"`
}

type FluentdEntry struct {
	Time   time.Time     `json:"time"`
	Record FluentdRecord `json:"record"`
}

// Tagged events: three struct types, one per kind, each with Type and Seq first. Written as
// maps by default, and as arrays (the tag first) by an Encoder with UseArrayEncodedStructs.
type Click struct {
	Type   string `msgpack:"type"`
	Seq    int64  `msgpack:"seq"`
	X      int64  `msgpack:"x"`
	Y      int64  `msgpack:"y"`
	Button string `msgpack:"button"`
}

type Key struct {
	Type      string   `msgpack:"type"`
	Seq       int64    `msgpack:"seq"`
	Code      string   `msgpack:"code"`
	Modifiers []string `msgpack:"modifiers"`
	Repeat    bool     `msgpack:"repeat"`
}

type Scroll struct {
	Type string    `msgpack:"type"`
	Seq  int64     `msgpack:"seq"`
	Dx   float64   `msgpack:"dx"`
	Dy   float64   `msgpack:"dy"`
	At   time.Time `msgpack:"at"`
}

// TaggedJSON reads any kind of tagged event from expected.json; kind() picks its struct.
type TaggedJSON struct {
	Type      string    `json:"type"`
	Seq       int64     `json:"seq"`
	X         int64     `json:"x"`
	Y         int64     `json:"y"`
	Button    string    `json:"button"`
	Code      string    `json:"code"`
	Modifiers []string  `json:"modifiers"`
	Repeat    bool      `json:"repeat"`
	Dx        float64   `json:"dx"`
	Dy        float64   `json:"dy"`
	At        time.Time `json:"at"`
}

func (t TaggedJSON) kind() any {
	switch t.Type {
	case "click":
		return Click{t.Type, t.Seq, t.X, t.Y, t.Button}
	case "key":
		return Key{t.Type, t.Seq, t.Code, t.Modifiers, t.Repeat}
	case "scroll":
		return Scroll{t.Type, t.Seq, t.Dx, t.Dy, t.At}
	}
	check(fmt.Errorf("unknown tagged event type %q", t.Type))
	return nil
}

// SortedMap is Fluent Bit metadata: string keys, written sorted (Go randomizes map order), to
// strings or to maps written the same way.
type SortedMap map[string]any

func (m SortedMap) EncodeMsgpack(enc *msgpack.Encoder) error {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	if err := enc.EncodeMapLen(len(keys)); err != nil {
		return err
	}
	for _, key := range keys {
		if err := enc.EncodeString(key); err != nil {
			return err
		}
		value := m[key]
		if inner, ok := value.(map[string]any); ok {
			value = SortedMap(inner)
		}
		if err := enc.Encode(value); err != nil {
			return err
		}
	}
	return nil
}

type FluentBitEntry struct {
	Form     string         `json:"form"`
	Time     time.Time      `json:"time"`
	Metadata map[string]any `json:"metadata"`
	Record   FluentdRecord  `json:"record"`
}

// A span of a trace, as a tracer writes it: its ids Go uint64s (0xcf, all nine bytes), meta
// written with sorted keys.
type Span struct {
	TraceID  uint64    `json:"trace_id" msgpack:"trace_id"`
	SpanID   uint64    `json:"span_id" msgpack:"span_id"`
	ParentID uint64    `json:"parent_id" msgpack:"parent_id"`
	Service  string    `json:"service" msgpack:"service"`
	Name     string    `json:"name" msgpack:"name"`
	Start    int64     `json:"start" msgpack:"start"`
	Duration int64     `json:"duration" msgpack:"duration"`
	Error    int32     `json:"error" msgpack:"error"`
	Meta     SortedMap `json:"meta" msgpack:"meta"`
}

type Expected struct {
	Events        []Event          `json:"events"`
	Fluentd       []FluentdEntry   `json:"fluentd"`
	UntaggedItems []UntaggedItem   `json:"untagged_items"`
	TaggedEvents  []TaggedJSON     `json:"tagged_events"`
	FluentBit     []FluentBitEntry `json:"fluentbit"`
	Spans         []Span           `json:"spans"`
}

// write encodes each value in turn, concatenated, into dir/name.
func write[T any](dir, name string, values []T) {
	writeWith(dir, name, values, func(*msgpack.Encoder) {})
}

// writeWith is write with an Encoder that configure has set up.
func writeWith[T any](dir, name string, values []T, configure func(*msgpack.Encoder)) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	configure(enc)
	for _, v := range values {
		check(enc.Encode(v))
	}
	check(os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	dir := "../data"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	text, err := os.ReadFile("../expected.json")
	check(err)
	var expected Expected
	check(json.Unmarshal(text, &expected))

	arrays := make([]EventArray, len(expected.Events))
	for i, e := range expected.Events {
		arrays[i] = EventArray{
			ID: e.ID, ProcessID: e.ProcessID, ThreadID: e.ThreadID, Timestamp: e.Timestamp,
			Line: e.Line, Value: e.Value, Filename: e.Filename, Path: e.Path, Tags: e.Tags,
			Attrs: e.Attrs, Inner: InnerArray{Name: e.Inner.Name, Level: e.Inner.Level}, Note: e.Note,
		}
	}
	entries := make([][]any, len(expected.Fluentd))
	for i, f := range expected.Fluentd {
		t := EventTime{uint32(f.Time.Unix()), uint32(f.Time.Nanosecond())}
		entries[i] = []any{&t, f.Record}
	}

	tagged := make([]any, len(expected.TaggedEvents))
	for i, t := range expected.TaggedEvents {
		tagged[i] = t.kind()
	}
	// Fluent Bit 2.1+: [[EventTime, metadata], record]; Fluentd: [EventTime, record].
	fluentBit := make([][]any, len(expected.FluentBit))
	for i, f := range expected.FluentBit {
		t := EventTime{uint32(f.Time.Unix()), uint32(f.Time.Nanosecond())}
		switch f.Form {
		case "fluentbit":
			fluentBit[i] = []any{[]any{&t, SortedMap(f.Metadata)}, f.Record}
		case "fluentd":
			fluentBit[i] = []any{&t, f.Record}
		default:
			check(fmt.Errorf("unknown form %q", f.Form))
		}
	}

	write(dir, "go_events_map.msgpack", expected.Events)
	write(dir, "go_events_array.msgpack", arrays)
	write(dir, "go_items_untagged.msgpack", expected.UntaggedItems)
	write(dir, "go_fluentd.msgpack", entries)
	write(dir, "go_tagged_map.msgpack", tagged)
	writeWith(dir, "go_tagged_array.msgpack", tagged, func(enc *msgpack.Encoder) {
		enc.UseArrayEncodedStructs(true)
	})
	write(dir, "go_fluentbit.msgpack", fluentBit)
	write(dir, "go_spans.msgpack", expected.Spans)
}
