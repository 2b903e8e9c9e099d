package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// Encode writes h as JSON lines: the header, then one line per op in slice
// order. Format and Version are filled in when empty; a header with another
// format or version is an error, as is an op that fails Op.Validate (the
// error names its index). Nothing is written after the first error, but
// lines before it may have been.
func Encode(w io.Writer, h *History) error {
	if h == nil {
		return fmt.Errorf("history: encode nil history")
	}
	hd := h.Header
	if hd.Format == "" {
		hd.Format = Format
	}
	if hd.Version == 0 {
		hd.Version = FormatVersion
	}
	if err := hd.validate(); err != nil {
		return err
	}
	line, err := json.Marshal(&hd)
	if err != nil {
		return fmt.Errorf("history: encode header: %w", err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(line)
	bw.WriteByte('\n')
	buf := make([]byte, 0, 512)
	for i := range h.Ops {
		op := &h.Ops[i]
		if err := op.Validate(); err != nil {
			return fmt.Errorf("history: encode op %d: %w", i, err)
		}
		buf = AppendOp(buf[:0], op)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("history: encode: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("history: encode: %w", err)
	}
	return nil
}

// AppendOp appends the JSON object of op (without a newline) to b and
// returns the extended buffer. The output is what encoding/json would
// produce for op, field for field, but several times faster; it does not
// validate op.
func AppendOp(b []byte, op *Op) []byte {
	b = append(b, `{"kind":`...)
	b = appendString(b, op.Kind.String())
	b = append(b, `,"client":`...)
	b = strconv.AppendInt(b, int64(op.Client), 10)
	b = append(b, `,"worker":`...)
	b = strconv.AppendInt(b, int64(op.Worker), 10)
	if op.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, op.Key)
	}
	if op.Request != 0 {
		b = append(b, `,"req":`...)
		b = strconv.AppendInt(b, op.Request, 10)
	}
	if op.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(op.Attempt), 10)
	}
	if op.FP != "" {
		b = append(b, `,"fp":`...)
		b = appendString(b, op.FP)
	}
	b = append(b, `,"call":`...)
	b = strconv.AppendInt(b, op.Call, 10)
	b = append(b, `,"ret":`...)
	b = strconv.AppendInt(b, op.Return, 10)
	if op.Intended != 0 {
		b = append(b, `,"intended":`...)
		b = strconv.AppendInt(b, op.Intended, 10)
	}
	if op.Outcome != OutcomeNone {
		b = append(b, `,"outcome":`...)
		b = appendString(b, op.Outcome.String())
	}
	if op.Token != 0 {
		b = append(b, `,"token":`...)
		b = strconv.AppendUint(b, op.Token, 10)
	}
	if op.Resp != "" {
		b = append(b, `,"resp":`...)
		b = appendString(b, op.Resp)
	}
	if op.Exec != "" {
		b = append(b, `,"exec":`...)
		b = appendString(b, op.Exec)
	}
	if op.Applied {
		b = append(b, `,"applied":true`...)
	}
	if op.Probe {
		b = append(b, `,"probe":true`...)
	}
	if op.Fault != "" {
		b = append(b, `,"fault":`...)
		b = appendString(b, string(op.Fault))
	}
	if op.Label != "" {
		b = append(b, `,"label":`...)
		b = appendString(b, op.Label)
	}
	if op.Err != "" {
		b = append(b, `,"err":`...)
		b = appendString(b, op.Err)
	}
	if op.Transition != "" {
		b = append(b, `,"transition":`...)
		b = appendString(b, string(op.Transition))
	}
	if op.PrevToken != 0 {
		b = append(b, `,"prev_token":`...)
		b = strconv.AppendUint(b, op.PrevToken, 10)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string. Printable ASCII without quotes,
// backslashes or HTML-sensitive characters is copied; anything else goes
// through encoding/json so escaping (and invalid UTF-8) is handled exactly
// as encoding/json does.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
