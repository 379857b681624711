package llm

import (
	"maps"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// The tables read by bpeLoader are the ones tiktoken-go-loader's own loader reads.
func TestBPELoaderReadsWhatTheOfflineLoaderReads(t *testing.T) {
	for _, file := range []string{"o200k_base.tiktoken", "cl100k_base.tiktoken", "p50k_base.tiktoken", "r50k_base.tiktoken"} {
		url := "https://openaipublic.blob.core.windows.net/encodings/" + file
		want, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(url)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bpeLoader{}.LoadTiktokenBpe(url)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 50000 || !maps.Equal(got, want) {
			t.Errorf("%s: %d ranks read, the offline loader reads %d (equal: %v)", file, len(got), len(want), maps.Equal(got, want))
		}
	}
}

func TestParseBPE(t *testing.T) {
	cases := []struct {
		name, data string
		want       map[string]int
		err        string
	}{
		{"pairs, empty lines ignored", "YQ== 0\n\nYmM= 1\n", map[string]int{"a": 0, "bc": 1}, ""},
		{"no final newline", "YQ== 7", map[string]int{"a": 7}, ""},
		{"a line without a rank", "YQ== 0\nYmM=\n", nil, "token table t line 2: want a token and a rank"},
		{"bad base64", "YQ== 0\n!!! 1\n", nil, "token table t line 2: illegal base64"},
		{"a rank that is not a number", "YQ== x1\n", nil, `token table t line 1: rank "x1" is not a number`},
		{"a negative rank", "YQ== -1\n", nil, `rank "-1" is not a number`},
	}
	for _, tc := range cases {
		got, err := parseBPE("t", []byte(tc.data))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestUnknownTokenTable(t *testing.T) {
	if _, err := (bpeLoader{}).LoadTiktokenBpe("https://example.com/nope.tiktoken"); err == nil || !strings.Contains(err.Error(), "nope.tiktoken") {
		t.Fatalf("error %v, want one naming the table", err)
	}
}

// BenchmarkBPELoad is reading the o200k table, which a process's first token count
// waits on (tiktoken-go keeps it after), with tiktoken-go-loader's loader and with
// bpeLoader.
func BenchmarkBPELoad(b *testing.B) {
	const url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
	for _, l := range []struct {
		name   string
		loader tiktoken.BpeLoader
	}{{"offline-loader", tiktoken_loader.NewOfflineLoader()}, {"bpeLoader", bpeLoader{}}} {
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.loader.LoadTiktokenBpe(url); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
