package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineSize is the longest line Decode and Reader accept (1 MiB); a longer
// line is an error naming it.
const MaxLineSize = 1 << 20

// Reader reads a JSON-lines history one op at a time, so a large file need
// not be held in memory. It is strict: every line must be one JSON object
// with only known fields, the first line must be a Header of the current
// Format and Version, every op must pass Op.Validate, and empty lines are
// errors. Errors name the 1-based line.
type Reader struct {
	br     *bufio.Reader
	line   int
	header Header
	err    error
	buf    []byte
}

// NewReader reads and checks the header line of r. An empty input, a first
// line that is not a history header, or an unsupported version is an error.
func NewReader(r io.Reader) (*Reader, error) {
	d := &Reader{br: bufio.NewReaderSize(r, 64<<10)}
	line, err := d.next()
	if err == io.EOF {
		return nil, errors.New("history: empty input: no header line")
	}
	if err != nil {
		return nil, err
	}
	if err := strictUnmarshal(line, &d.header); err != nil {
		return nil, fmt.Errorf("history: line 1: not a history header: %w", err)
	}
	if d.header.Format != Format {
		return nil, fmt.Errorf("history: line 1: not a history header: format %q, want %q", d.header.Format, Format)
	}
	if err := d.header.validate(); err != nil {
		return nil, fmt.Errorf("line 1: %w", err)
	}
	return d, nil
}

// Header returns the header read by NewReader.
func (d *Reader) Header() Header { return d.header }

// Line returns the number of the last line read.
func (d *Reader) Line() int { return d.line }

// Read decodes the next op into op. It returns io.EOF after the last op, and
// the same error again on every call after a failure.
func (d *Reader) Read(op *Op) error {
	if d.err != nil {
		return d.err
	}
	line, err := d.next()
	if err != nil {
		d.err = err
		return err
	}
	*op = Op{}
	if err := decodeOp(line, op); err != nil {
		d.err = fmt.Errorf("history: line %d: %w", d.line, err)
		return d.err
	}
	if err := op.Validate(); err != nil {
		d.err = fmt.Errorf("line %d: %w", d.line, err)
		return d.err
	}
	return nil
}

// next returns the next line without its newline (the slice is valid until
// the following call), or io.EOF at the end of the input.
func (d *Reader) next() ([]byte, error) {
	d.buf = d.buf[:0]
	for {
		chunk, err := d.br.ReadSlice('\n')
		d.buf = append(d.buf, chunk...)
		if len(d.buf) > MaxLineSize+1 {
			return nil, fmt.Errorf("history: line %d: longer than %d bytes", d.line+1, MaxLineSize)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if len(d.buf) == 0 {
				return nil, io.EOF
			}
		} else if err != nil {
			return nil, fmt.Errorf("history: line %d: %w", d.line+1, err)
		}
		d.line++
		line := bytes.TrimSuffix(d.buf, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, fmt.Errorf("history: line %d: empty line", d.line)
		}
		return line, nil
	}
}

// DecodeFile decodes the history file at path, as Decode. A history that
// does not decode is an error that starts with path.
func DecodeFile(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// Decode reads a whole history written by Encode. See Reader for the rules;
// the first violation is returned as an error naming its line, with no
// partial History.
func Decode(r io.Reader) (*History, error) {
	d, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	h := &History{Header: d.Header()}
	for {
		var op Op
		err := d.Read(&op)
		if err == io.EOF {
			return h, nil
		}
		if err != nil {
			return nil, err
		}
		h.Ops = append(h.Ops, op)
	}
}

// decodeOp parses one op line: the fast parser handles lines as Encode
// writes them and hands anything else to encoding/json, which is the
// authority on what is accepted.
func decodeOp(line []byte, op *Op) error {
	if parseOpFast(line, op) {
		return nil
	}
	*op = Op{}
	return strictUnmarshal(line, op)
}

// strictUnmarshal decodes exactly one JSON value from b into v, refusing
// unknown fields and trailing data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}
