package wire

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// appendString appends s as encoding/json writes it: a JSON string, with
// <, > and & escaped and invalid UTF-8 as U+FFFD. Plain ASCII, the common
// case, is copied as is; anything else goes through encoding/json.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendNumber appends f as encoding/json writes it; NaN and infinities
// have no JSON form and are an error. The numbers that encoding/json
// writes without an exponent are formatted here alike; the others go
// through encoding/json.
func appendNumber(dst []byte, f float64) ([]byte, error) {
	if abs := math.Abs(f); abs == 0 || (abs >= 1e-6 && abs < 1e21) {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}
