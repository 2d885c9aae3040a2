// Calls an ovserve server's gRPC port with the generated Go stubs (clients/go), as a Go user of the stubs would;
// prints what it got as one JSON line for tests/test_language_stubs.py to compare with the Python client's answers.
//
// Usage: go run call.go HOST:PORT MODEL PROMPT MAX_TOKENS
package main

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ovservev1 "ovserve/clients/go/ovserve/v1"
)

type result struct {
	Models           []string `json:"models"`
	Unary            string   `json:"unary"`
	Finish           int32    `json:"finish"`
	Streamed         string   `json:"streamed"`
	MissingModelCode string   `json:"missingModelCode"`
}

func main() {
	target, model, prompt := os.Args[1], os.Args[2], os.Args[3]
	maxTokens, err := strconv.Atoi(os.Args[4])
	if err != nil {
		log.Fatalf("MAX_TOKENS: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// WithInsecure rather than credentials/insecure: the latter is newer than Debian bookworm's grpc-go 1.33.
	conn, err := grpc.DialContext(ctx, target, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		log.Fatalf("dial %s: %v", target, err)
	}
	defer conn.Close()
	models := ovservev1.NewModelServiceClient(conn)
	chat := ovservev1.NewChatServiceClient(conn)

	var out result
	listed, err := models.ListModels(ctx, &ovservev1.ListModelsRequest{})
	if err != nil {
		log.Fatalf("ListModels: %v", err)
	}
	for _, entry := range listed.GetData() {
		out.Models = append(out.Models, entry.GetId())
	}
	request := &ovservev1.CreateChatCompletionRequest{
		Model:       model,
		Messages:    []*ovservev1.ChatMessage{{Role: "user", Content: proto.String(prompt)}},
		MaxTokens:   proto.Int32(int32(maxTokens)),
		Temperature: proto.Float64(0),
	}
	unary, err := chat.CreateChatCompletion(ctx, request)
	if err != nil {
		log.Fatalf("CreateChatCompletion: %v", err)
	}
	out.Unary = unary.GetChoices()[0].GetMessage().GetContent()
	out.Finish = int32(unary.GetChoices()[0].GetFinishReason())

	stream, err := chat.StreamChatCompletion(ctx, &ovservev1.StreamChatCompletionRequest{
		Model: request.Model, Messages: request.Messages, MaxTokens: request.MaxTokens, Temperature: request.Temperature,
	})
	if err != nil {
		log.Fatalf("StreamChatCompletion: %v", err)
	}
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatalf("StreamChatCompletion: %v", err)
		}
		for _, choice := range chunk.GetChoices() {
			out.Streamed += choice.GetDelta().GetContent()
		}
	}

	// A status the server sends arrives as a gRPC status error with its code.
	_, err = models.GetModel(ctx, &ovservev1.GetModelRequest{Model: "no-such-model"})
	out.MissingModelCode = status.Code(err).String()

	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		log.Fatal(err)
	}
}
