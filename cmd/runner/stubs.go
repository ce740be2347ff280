package main

import "github.com/spf13/cobra"

func (a *app) serveCommand() *cobra.Command  { return &cobra.Command{Use: "serve", Hidden: true} }
func (a *app) submitCommand() *cobra.Command { return &cobra.Command{Use: "submit", Hidden: true} }
func (a *app) tasksCommand() *cobra.Command  { return &cobra.Command{Use: "tasks", Hidden: true} }
